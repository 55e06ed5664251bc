/* caller.c: see caller.h. */
#include "caller.h"

#include "auth_client.h"
#include "db_common.h"
#include "libcommon/log.h"

#include <string.h>

bool context_get(http_req *req, http_resp *resp, const char *access_key, const char *group,
                 json_t **ctx)
{
    long status = 0;
    ts_err err = {{0}};
    json_t *body = NULL;
    *ctx = NULL;
    if (!authctx_get(authc(), access_key, group, req->request_id, &status, &body, &err)) {
        char q[600];
        TLOG_WARN("tessera-auth unreachable", "error=%s", tlog_quote(q, sizeof(q), err.msg));
        http_problem(resp, 503, "service-unavailable", NULL, "tessera-auth is unreachable");
        return false;
    }
    if (status == 200 && json_is_object(body)) {
        *ctx = body;
        return true;
    }
    const char *msg = json_string_value(json_object_get(body, "msg"));
    msg = msg ? msg : "";
    if (status == 404 && !group) {
        http_problem(resp, 404, "not-found", NULL, "unknown access key %s", access_key);
    } else if (status == 404) {
        http_problem(resp, 400, "invalid-api-params", NULL, "%s", msg[0] ? msg : "unknown group");
    } else if (status == 403) {
        http_problem(resp, 403, "forbidden", NULL, "%s", msg[0] ? msg : "forbidden");
    } else if (status == 400) {
        http_problem(resp, 400, "invalid-api-params", NULL, "%s", msg[0] ? msg : "bad request");
    } else {
        char q[600];
        TLOG_WARN("tessera-auth answered an error", "status=%ld msg=%s", status,
                  tlog_quote(q, sizeof(q), msg));
        http_problem(resp, 503, "service-unavailable", NULL, "tessera-auth answered %ld", status);
    }
    json_decref(body);
    return false;
}

bool caller_get(http_req *req, http_resp *resp, const char *group, reg_caller *out)
{
    memset(out, 0, sizeof(*out));
    const char *id, *ak;
    if (authctx_caller_of(req, &id, &ak) != AUTHCTX_CALLER_OK) {
        http_problem(resp, 401, "auth-failed", NULL,
                     "no authenticated caller (this endpoint needs a signed request)");
        return false;
    }
    tlog_ctx_user(id);
    json_t *ctx = NULL;
    if (!context_get(req, resp, ak, group, &ctx)) {
        /* An unknown key of a forwarded caller is an authentication failure. */
        if (http_resp_status(resp) == 404)
            http_problem(resp, 401, "auth-failed", NULL, "unknown caller access key");
        return false;
    }
    if (authctx_check(ctx, id) != AUTHCTX_ACTIVE) {
        http_problem(resp, 401, "auth-failed", NULL,
                     "the caller's keypair is not an active keypair of the caller");
        json_decref(ctx);
        return false;
    }
    ts_strlcpy(out->user_id, id, sizeof(out->user_id));
    ts_strlcpy(out->access_key, ak, sizeof(out->access_key));
    ts_strlcpy(out->role, authctx_user_field(ctx, "role"), sizeof(out->role));
    ts_strlcpy(out->domain, authctx_user_field(ctx, "domain_name"), sizeof(out->domain));
    out->ctx = ctx;
    return true;
}

void caller_free(reg_caller *c)
{
    json_decref(c->ctx);
    c->ctx = NULL;
}

bool context_is_superadmin(const json_t *ctx)
{
    return strcmp(authctx_user_field(ctx, "role"), "superadmin") == 0;
}

bool caller_is_superadmin(const reg_caller *c)
{
    return strcmp(c->role, "superadmin") == 0;
}

bool caller_is_admin(const reg_caller *c)
{
    return caller_is_superadmin(c) || strcmp(c->role, "admin") == 0;
}

char *caller_hidden_users(const reg_caller *c)
{
    const char *ids[64];
    size_t n = 0, i;
    json_t *v;
    if (strcmp(c->role, "admin") == 0)
        json_array_foreach(json_object_get(c->ctx, "domain_superadmins"), i, v)
        {
            const char *id = json_string_value(v);
            if (id && ts_uuid_valid(id) && n < TS_ARRAY_LEN(ids)) ids[n++] = id;
        }
    return reg_uuid_array(ids, n);
}

bool caller_hides_user(const reg_caller *c, const char *user_id)
{
    size_t i;
    json_t *v;
    if (strcmp(c->role, "admin") != 0) return false;
    json_array_foreach(json_object_get(c->ctx, "domain_superadmins"), i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), user_id) == 0) return true;
    }
    return false;
}

bool caller_get_admin(http_req *req, http_resp *resp, bool write, const char *what, reg_caller *c)
{
    if (!caller_get(req, resp, NULL, c)) return false;
    bool ok = write ? caller_is_superadmin(c) : caller_is_admin(c);
    if (!ok) {
        http_problem(resp, 403, "forbidden", NULL, "only %s may %s %s",
                     write ? "superadmins" : "administrators", write ? "change" : "list", what);
        caller_free(c);
    }
    return ok;
}
