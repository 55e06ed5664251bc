/* session_apps.h: a session's apps as the gateway reaches them: the session
 * as the caller may see it (the registry's GET /v1/sessions/{name}, scoped
 * as the caller), its service ports (servicePorts), and an app started on
 * demand (the registry's POST /v1/sessions/{id}/apps/{app}/start: the agent
 * starts it unless it listens). Shared by start-service (sessions.c, which
 * then makes a tessera-wsproxy route) and the streams (streams.c, which
 * connect to the app's published host port themselves). */
#ifndef GATEWAY_SESSION_APPS_H
#define GATEWAY_SESSION_APPS_H

#include "gateway.h"
#include "identity.h"

#include "libcommon/http.h"

#define SESSION_APPS_TIMEOUT_MS 10000       /* the session's look-up */
#define SESSION_APPS_START_TIMEOUT_MS 30000 /* the agent may start the app (10 s) */

/* The session {name} of req as id may see it: true with *info (the
 * registry's answer; the caller decrefs) when it is RUNNING; false with the
 * problem in resp (the registry's 404 for a session the caller may not see,
 * 409 invalid-session-state when it is not RUNNING). what: the refusal's
 * wording ("apps can be opened", "streams can be opened"). */
bool session_apps_running(gateway *gw, http_req *req, http_resp *resp, const gw_identity *id,
                          const char *name, const char *what, json_t **info) TS_MUST_CHECK;

/* One of a session's apps, reachable. */
typedef struct session_app {
    char sid[64];      /* sessionUuid */
    char name[128];    /* the service port's name */
    char protocol[16]; /* http, tcp or preopen (anything else: http) */
    char host[256];    /* where its host port is published */
    int host_port;
} session_app;

/* The app named app (else the one on container port port > 0) of the RUNNING
 * session in info, of its kernel named kernel (main1, sub1, ... or a kernel
 * id; NULL or "": the main kernel), started: true with *out; false with the
 * problem in resp (404 no such kernel or service port, 409 not published
 * yet or cannot be started, the registry's or the agent's answer). */
bool session_apps_start(gateway *gw, http_req *req, http_resp *resp, const gw_identity *id,
                        const json_t *info, const char *kernel, const char *app, json_int_t port,
                        session_app *out) TS_MUST_CHECK;

/* The session's apps in Backend.AI's shape (get_stream_apps): [{name,
 * protocol, ports, url_template?, allowed_arguments?, allowed_envs?}]. New
 * reference. */
json_t *session_apps_list(const json_t *info);

#endif
