/* service_ports.h: a kernel's service ports as the API shows them.
 *
 * The registry stores each kernel's ports as the agent reported them
 * ([{name, protocol, container_port, host_port}]); the API answers Backend.AI's
 * servicePorts shape ([{name, protocol, container_ports: [p], host_ports:
 * [h] or [], host}]). The registry's session view and the gateway's app start
 * (which looks a kernel's port up by name) both use this one conversion. */
#ifndef TESSERA_SERVICE_PORTS_H
#define TESSERA_SERVICE_PORTS_H

#include <jansson.h>

/* A new array in Backend.AI's shape from stored (an array; anything else
 * gives []): host_ports is empty where no host port was handed out (<= 0),
 * host is host or "" (the kernel's host: its agent's address). */
json_t *service_ports_view(const json_t *stored, const char *host);

#endif
