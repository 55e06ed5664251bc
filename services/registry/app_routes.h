/* app_routes.h: a session's app routes on tessera-wsproxy end with it
 * (docs/internal-api.md, tessera-wsproxy). When a session reaches TERMINATING
 * or a final status, DELETE <wsproxy.url>/v1/sessions/{id}/routes: after the
 * COMMIT (ob_flush), on a worker thread of its own (started on first use),
 * best effort: a failure is logged as a warning (the call is idempotent;
 * wsproxy's once-a-second check and the routes' TTLs bound what is left). */
#ifndef REGISTRY_APP_ROUTES_H
#define REGISTRY_APP_ROUTES_H

/* Queue the removal of session_id's routes (no-op when wsproxy.url is empty;
 * dropped with a warning when the queue is full). Never blocks on the network. */
void app_routes_revoke(const char *session_id);

#endif
