/* login_grant.c: the answer of a login that succeeded (login_grant.h). */
#include "login_grant.h"

#include "libcommon/pgjson.h"
#include "libcommon/log.h"

static const char keypair_sql[] =
    "SELECT access_key, secret_key FROM auth.keypairs WHERE user_id = $1::uuid AND is_active"
    " ORDER BY created_at, access_key LIMIT 1";

void login_grant(PGconn *conn, http_resp *resp, const char *uid, const char *role,
                 const char *status, const char *email, const char *how, const char *qaddr)
{
    const char *ip[] = {uid};
    PGresult *k = pgjson_query(conn, resp, "find keypair", keypair_sql, 1, ip);
    if (!k) return;
    if (PQntuples(k) != 1) {
        http_problem(resp, 401, "auth-failed", NULL, "this user has no active keypair");
    } else {
        tlog_ctx_access_key(PQgetvalue(k, 0, 0));
        TLOG_INFO(how, "client=%s", qaddr);
        json_t *data = json_pack("{s:s, s:s, s:s, s:s}", "access_key", PQgetvalue(k, 0, 0),
                                 "secret_key", PQgetvalue(k, 0, 1), "role", role, "status", status);
        if (email) json_object_set_new(data, "email", json_string(email));
        http_reply_json(resp, 200, json_pack("{s:o}", "data", data));
    }
    PQclear(k);
}
