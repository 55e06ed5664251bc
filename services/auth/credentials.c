/* credentials.c: GET /v1/credentials/{access_key} (see credentials.h). One
 * primary-key lookup joined with the owner: this is on the gateway's cache
 * miss path. */
#include "credentials.h"

#include "libcommon/pgjson.h"
#include "libcommon/log.h"

#include <stdlib.h>
#include <string.h>

static const char sql[] =
    "SELECT k.access_key, k.secret_key, k.is_active, k.is_admin, k.rate_limit, k.resource_policy,"
    " u.id::text, u.email, u.username, u.role, u.status, u.domain_name"
    " FROM auth.keypairs k JOIN auth.users u ON u.id = k.user_id WHERE k.access_key = $1";

static bool plausible_key(const char *ak)
{
    if (!ak || strlen(ak) != 20) return false;
    for (const char *p = ak; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))) return false;
    return true;
}

static void h_credentials(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    const char *ak = http_param(req, "access_key");
    if (!plausible_key(ak)) {
        http_problem(resp, 404, "not-found", NULL, "unknown access key");
        return;
    }
    tlog_ctx_access_key(ak);
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) return;
    const char *p[] = {ak};
    PGresult *r = pgjson_query(conn, resp, "read credentials", sql, 1, p);
    if (r) {
        if (PQntuples(r) != 1) {
            http_problem(resp, 404, "not-found", NULL, "unknown access key");
        } else {
            json_t *user = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "id", PQgetvalue(r, 0, 6),
                                     "email", PQgetvalue(r, 0, 7), "username", PQgetvalue(r, 0, 8),
                                     "role", PQgetvalue(r, 0, 9), "status", PQgetvalue(r, 0, 10),
                                     "domain_name", PQgetvalue(r, 0, 11));
            json_t *body =
                json_pack("{s:s, s:s, s:b, s:b, s:I, s:s, s:o}", "access_key", PQgetvalue(r, 0, 0),
                          "secret_key", PQgetvalue(r, 0, 1), "is_active",
                          PQgetvalue(r, 0, 2)[0] == 't', "is_admin", PQgetvalue(r, 0, 3)[0] == 't',
                          "rate_limit", (json_int_t)atoll(PQgetvalue(r, 0, 4)), "resource_policy",
                          PQgetvalue(r, 0, 5), "user", user);
            http_reply_json(resp, 200, body);
        }
        PQclear(r);
    }
    pgjson_put(s, conn);
}

void credentials_routes(svc *s)
{
    http_route(svc_router(s), "GET", "/v1/credentials/{access_key}", h_credentials, s);
}
