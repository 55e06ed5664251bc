/* sessions.h: the registry's internal session API (called by the gateway
 * with the caller headers; docs/sessions.md):
 *
 *   POST   /v1/sessions                       create (session_create.h)
 *   GET    /v1/sessions?owner=&status=&type=&limit=&offset=   list
 *   GET    /v1/sessions/{name-or-id}?owner_access_key=       info
 *   DELETE /v1/sessions/{name-or-id}?forced=&owner_access_key=   destroy / cancel
 *   PATCH  /v1/sessions/{name-or-id}?owner_access_key=       restart
 *   GET    /v1/sessions/{name-or-id}/history?owner_access_key=
 *   POST   /v1/sessions/{name-or-id}/activity   the session was used (the
 *                                              gateway's streams; 204): the
 *                                              idle checker counts it
 *   POST   /v1/sessions/{name-or-id}/execute, GET .../logs,
 *          POST .../apps/{app}/start           relayed to the main kernel's
 *                                              agent (session_relay.h)
 *
 * This module: list, info, destroy, restart and history, and how the others
 * find the session a request names (sessions_find).
 * {name-or-id}: a session id (UUID), or a name among the sessions of the
 * caller's keypair (owner_access_key: another keypair's, for administrators);
 * a live session of that name first, else the most recent one.
 * Who sees what: a user its own sessions (any of its keypairs); a domain
 * admin every session of its domain; a superadmin all. forced destroy and
 * owner_access_key need an administrator. */
#ifndef REGISTRY_SESSIONS_H
#define REGISTRY_SESSIONS_H

#include "libcommon/svc.h"

#include "caller.h"

void sessions_routes(svc *s);

/* Resolve {name-or-id} (route parameter "id") to a session id the caller may
 * access, and name it in the thread's log context; false after a problem
 * answer (404 also for sessions the caller may not see). */
bool sessions_find(PGconn *conn, http_req *req, http_resp *resp, const ts_caller *c,
                   char id[TS_UUID_STRLEN]) TS_MUST_CHECK;

#endif
