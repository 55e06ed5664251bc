/* app_start.h: start an app of a running kernel on demand (POST
 * /v1/kernels/{id}/apps/{app}/start, docs/agent.md "Apps").
 *
 * An app is one of the kernel's service ports, by name. It counts as running
 * when its container port accepts a TCP connection on the kernel's address.
 * If it is not running and has a start command (the image label
 * tessera.app.<name>.start, or tessera-term for the built-in ttyd), the
 * command runs detached in the container (runc exec of /bin/sh, which leaves
 * it in the background with stdio on /dev/null, its own process), and the
 * agent waits for the port to accept. A start while the app runs is a no-op.
 *
 * Stopping an app (POST /v1/kernels/{id}/apps/{app}/stop, Backend.AI's
 * shutdown-service) ends the processes of the kernel that listen on its
 * container port: SIGTERM, SIGKILL after a grace (runtime_listeners.h). A
 * later start starts it again. */
#ifndef AGENT_APP_START_H
#define AGENT_APP_START_H

#include "services/agent/container.h"
#include "services/agent/kernels.h"

#define APP_START_WAIT_MS 10000

typedef enum app_start_result {
    APP_RUNNING,    /* it was already listening: nothing done */
    APP_STARTED,    /* started now, and listening */
    APP_NOT_FOUND,  /* the kernel has no service port of that name */
    APP_NO_COMMAND, /* not listening, and nothing to start it with */
    APP_TIMEOUT,    /* started, but not listening within wait_ms */
    APP_FAILED,     /* the kernel is not running, or the exec failed (err) */
} app_start_result;

/* Start app of kernel v (a running kernel) unless it is already listening;
 * *port is its service port when found. err says why for APP_FAILED. */
app_start_result app_start(runtime *rt, const kernel_view *v, const char *app, int wait_ms,
                           const kernel_service_port **port, ts_err *err);

#define APP_STOP_GRACE_MS 5000

typedef enum app_stop_result {
    APP_STOPPED,        /* something listened, and was stopped */
    APP_NOT_LISTENING,  /* nothing listened on its port: nothing done */
    APP_STOP_NOT_FOUND, /* the kernel has no service port of that name */
    APP_STOP_FAILED,    /* the kernel is not running (err) */
} app_stop_result;

/* Stop app of kernel v; *port as app_start. */
app_stop_result app_stop(runtime *rt, const kernel_view *v, const char *app, int grace_ms,
                         const kernel_service_port **port, ts_err *err);

#endif
