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
    /* The shell command that starts the app when it is opened and not yet
     * listening (image label tessera.app.<name>.start; the built-in ttyd:
     * tessera-term), or "" when the app cannot be started on demand. */
    char start[512];
} kernel_service_port;

/* Parse the label value (may be NULL or "") and append the preopen ports
 * into out (*count of them); a container port already listed is not added
 * twice. false with err set for a malformed label or more than
 * KERNEL_MAX_PORTS. */
bool service_ports_parse(const char *label, const int32_t *preopen, size_t n_preopen,
                         kernel_service_port *out, int *count, ts_err *err) TS_MUST_CHECK;

/* Fill each port's start command from the image label
 * "tessera.app.<name>.start" (labels_json may be NULL). A command longer than
 * the field is an error (err set, false). */
bool service_ports_start_commands(const char *labels_json, kernel_service_port *ports, int n,
                                  ts_err *err) TS_MUST_CHECK;

/* A label of the image (labels_json: the config's Labels object as text), as
 * a heap string, or NULL. */
char *image_label(const char *labels_json, const char *name);

#endif
