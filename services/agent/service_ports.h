/* service_ports.h: the ports a kernel publishes, from its image's labels
 * (Backend.AI's "ai.backend.service-ports": "jupyter:http:8080,sshd:tcp:2200",
 * or "name:proto:[8080,8081]" for a service with several ports) plus the
 * ports the user asked to pre-open. */
#ifndef AGENT_SERVICE_PORTS_H
#define AGENT_SERVICE_PORTS_H

#include "libcommon/common.h"

#define KERNEL_MAX_PORTS 16

typedef struct kernel_service_port {
    char name[64];
    char protocol[16]; /* "http", "tcp", "preopen" */
    int container_port;
    int host_port; /* 0 until the kernel runs */
} kernel_service_port;

/* Parse the label value (may be NULL or "") and append the preopen ports;
 * a container port already listed is not added twice. Returns the count, or
 * -1 with err set for a malformed label or more than KERNEL_MAX_PORTS. */
int service_ports_parse(const char *label, const int32_t *preopen, size_t n_preopen,
                        kernel_service_port *out, ts_err *err);

/* A label of the image (labels_json: the config's Labels object as text), as
 * a heap string, or NULL. */
char *image_label(const char *labels_json, const char *name);

#endif
