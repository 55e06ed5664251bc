/* admin.h: the contract between tessera-auth's core (callers, users,
 * keypairs) and its admin resources (domains, projects, members, policies,
 * resource-group access, access-log query).
 *
 * Every admin handler is registered with the svc as its route context and
 * follows the same shape:
 *
 *     static void h_thing(http_req *req, http_resp *resp, void *ctx)
 *     {
 *         svc *s = ctx;
 *         PGconn *conn = db_get(s, resp);              // 503 problem when none
 *         if (!conn) return;
 *         auth_caller c;
 *         if (!caller_resolve(conn, req, resp, &c)) {   // 401 problem sent
 *             db_put(s, conn);
 *             return;
 *         }
 *         if (!caller_can_manage_domain(&c, domain)) { http_problem(resp, 403, ...); ... }
 *         ...
 *         db_put(s, conn);
 *     }
 *
 * The gateway verifies signatures and forwards /admin/X?Q to /v1/admin/X?Q
 * with X-Tessera-Caller (user id) and X-Tessera-Caller-Access-Key; the role
 * and domain are always read from our own tables (docs/internal-api.md). */
#ifndef AUTH_ADMIN_H
#define AUTH_ADMIN_H

#include "caller.h"
#include "db_util.h"
#include "events.h"
#include "libcommon/svc.h"

/* Provided by the admin-resources module (services/auth/admin_routes.c):
 * registers /v1/admin/{domains,projects,keypair-resource-policies,
 * user-resource-policies,resource-group-access,access-log} with s as the
 * route context. auth_routes() (http_api.c) calls it. */
void admin_resources_routes(svc *s);

#endif
