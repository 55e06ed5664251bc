/* caller.c: resolve X-Tessera-Caller to the user's current row, and the
 * scoping rules (see caller.h). */
#include "caller.h"

#include "libcommon/pgjson.h"
#include "libcommon/log.h"

#include <string.h>

/* One indexed lookup by primary key; when the access key header is present it
 * must be an active keypair of that user (defence in depth: the gateway has
 * already checked it). */
static const char resolve_sql[] =
    "SELECT u.id::text, u.email, u.username, u.role, u.status, u.domain_name,"
    " ($2::text IS NULL OR EXISTS (SELECT 1 FROM auth.keypairs k WHERE k.access_key = $2"
    "   AND k.user_id = u.id AND k.is_active)) AS key_ok"
    " FROM auth.users u WHERE u.id = $1::uuid";

bool caller_resolve(PGconn *conn, http_req *req, http_resp *resp, auth_caller *out)
{
    memset(out, 0, sizeof(*out));
    const char *id = http_header(req, "X-Tessera-Caller");
    const char *ak = http_header(req, "X-Tessera-Caller-Access-Key");
    if (ak && !*ak) ak = NULL;
    if (!id || !ts_uuid_valid(id)) {
        http_problem(resp, 401, "auth-failed", NULL,
                     "no authenticated caller (this endpoint needs a signed request)");
        return false;
    }
    if (ak && strlen(ak) != 20) {
        http_problem(resp, 401, "auth-failed", NULL, "malformed caller access key");
        return false;
    }
    const char *params[] = {id, ak};
    PGresult *r = pgjson_query(conn, resp, "resolve caller", resolve_sql, 2, params);
    if (!r) return false;
    bool ok = false;
    if (PQntuples(r) != 1) {
        http_problem(resp, 401, "auth-failed", NULL, "unknown caller");
    } else if (strcmp(PQgetvalue(r, 0, 4), "active") != 0) {
        http_problem(resp, 401, "auth-failed", NULL, "the caller's user account is %s",
                     PQgetvalue(r, 0, 4));
    } else if (PQgetvalue(r, 0, 6)[0] != 't') {
        http_problem(resp, 401, "auth-failed", NULL, "the caller's keypair is not active");
    } else {
        ts_strlcpy(out->user_id, PQgetvalue(r, 0, 0), sizeof(out->user_id));
        ts_strlcpy(out->email, PQgetvalue(r, 0, 1), sizeof(out->email));
        ts_strlcpy(out->username, PQgetvalue(r, 0, 2), sizeof(out->username));
        ts_strlcpy(out->role, PQgetvalue(r, 0, 3), sizeof(out->role));
        ts_strlcpy(out->status, PQgetvalue(r, 0, 4), sizeof(out->status));
        ts_strlcpy(out->domain_name, PQgetvalue(r, 0, 5), sizeof(out->domain_name));
        if (ak) ts_strlcpy(out->access_key, ak, sizeof(out->access_key));
        tlog_ctx_user(out->user_id);
        ok = true;
    }
    PQclear(r);
    return ok;
}

bool caller_has_access_key(const auth_caller *c, http_resp *resp)
{
    if (c->access_key[0]) return true;
    http_problem(resp, 401, "auth-failed", NULL,
                 "this endpoint acts on the signing keypair: the request named none");
    return false;
}

bool caller_is_superadmin(const auth_caller *c)
{
    return strcmp(c->role, "superadmin") == 0;
}

bool caller_is_admin(const auth_caller *c)
{
    return caller_is_superadmin(c) || strcmp(c->role, "admin") == 0;
}

bool caller_can_see_domain(const auth_caller *c, const char *domain_name)
{
    return caller_is_superadmin(c) || (domain_name && strcmp(c->domain_name, domain_name) == 0);
}

bool caller_can_manage_domain(const auth_caller *c, const char *domain_name)
{
    if (caller_is_superadmin(c)) return true;
    return strcmp(c->role, "admin") == 0 && domain_name && strcmp(c->domain_name, domain_name) == 0;
}

bool caller_can_see_user(const auth_caller *c, const char *user_id, const char *user_domain,
                         const char *user_role)
{
    if (caller_is_superadmin(c)) return true;
    if (user_id && strcmp(c->user_id, user_id) == 0) return true;
    return caller_can_manage_user(c, user_domain, user_role);
}

bool caller_can_manage_user(const auth_caller *c, const char *user_domain, const char *user_role)
{
    if (caller_is_superadmin(c)) return true;
    if (strcmp(c->role, "admin") != 0) return false;
    if (!user_domain || strcmp(c->domain_name, user_domain) != 0) return false;
    return user_role && strcmp(user_role, "superadmin") != 0;
}
