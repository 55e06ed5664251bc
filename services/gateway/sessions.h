/* sessions.h: the public session API (api-compat.md "Sessions"; docs/api.md
 * "Sessions") and the registry's admin resources, forwarded to
 * tessera-registry (registry.url; docs/sessions.md "Registry internal API").
 *
 * Every route is signed (verify.c); a route on a session puts its name in
 * the log context (session_name). The gateway checks only what it needs to
 * forward (a create body must be a JSON object, the task-log query needs a
 * session name); the registry validates and answers, and its status and body
 * are relayed as they are (proxy.c).
 *
 *   /session and /kernel (the same routes under both prefixes)
 *   POST   /session                     -> POST   /v1/sessions (also /session/_/create)
 *   GET    /session                     -> GET    /v1/sessions?<query>[&owner=<caller's key>]
 *                                          (mine; ?all=true: all the caller may see)
 *   GET    /session/{name}              -> GET    /v1/sessions/{name}
 *   DELETE /session/{name}              -> DELETE /v1/sessions/{name}?<query>
 *   PATCH  /session/{name}              -> PATCH  /v1/sessions/{name}
 *   POST   /session/{name}              -> POST   /v1/sessions/{name}/execute
 *   GET    /session/{name}/logs         -> GET    /v1/sessions/{name}/logs
 *   GET    /session/_/logs?session_name -> GET    /v1/sessions/{session_name}/logs (text/plain)
 *   GET    /session/{name}/history      -> GET    /v1/sessions/{name}/history
 *   POST   /session/{name}/start-service   -> POST /v1/sessions/{id}/apps/{app}/start (the
 *                                         agent starts the app), then wsproxy POST /v1/routes
 *   POST   /session/{name}/upload, GET|POST .../download, .../download_single,
 *   GET    /session/{name}/files        -> the same path under /v1/sessions (files in the
 *                                         session's /home/work; the upload is buffered,
 *                                         bounded by http.max_body)
 *   *      /admin/{resource-groups,agents,images,resource-presets}[/...] -> /v1/admin/...
 *
 * Blocking: a create that waits (no enqueueOnly) holds its HTTP worker thread
 * for up to maxWaitSeconds + 5 s, an execute up to SESSIONS_EXEC_TIMEOUT_MS;
 * the gateway's http.threads bounds how many such calls wait at once (and a
 * waiting thread also delays the other connections it serves). */
#ifndef GATEWAY_SESSIONS_H
#define GATEWAY_SESSIONS_H

#include "gateway.h"

/* Upstream time limits. */
#define SESSIONS_TIMEOUT_MS 10000      /* ordinary calls */
#define SESSIONS_MAX_WAIT_S 60         /* maxWaitSeconds considered at most */
#define SESSIONS_WAIT_MARGIN_S 5       /* a waiting create gets maxWaitSeconds + this */
#define SESSIONS_EXEC_TIMEOUT_MS 75000 /* execute (the agent's own limit is 60 s by default) */
#define SESSIONS_SCAN_TIMEOUT_MS 65000 /* POST /admin/images/scan reads the OCI catalog */

/* Register the routes above on gw's router (the handlers' context is gw). */
void sessions_routes(gateway *gw);

/* The upstream timeout of a create with this body: SESSIONS_TIMEOUT_MS for
 * enqueueOnly, else (min(maxWaitSeconds, SESSIONS_MAX_WAIT_S) + margin) s,
 * the cap when maxWaitSeconds is absent or unreadable. Exposed for tests. */
int64_t sessions_create_timeout_ms(const json_t *body);

#endif
