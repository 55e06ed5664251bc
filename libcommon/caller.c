/* caller.c: the caller of a forwarded request from tessera-auth's context
 * (caller.h). */
#include "libcommon/caller.h"

#include "libcommon/log.h"

#include <string.h>

const char *caller_context_refusal(const json_t *ctx, const char *user_id)
{
    const json_t *user = json_object_get(ctx, "user");
    static const char *const needed[] = {"id", "role", "domain_name"};
    for (size_t i = 0; i < TS_ARRAY_LEN(needed); i++)
        if (!json_is_string(json_object_get(user, needed[i])))
            return "malformed context from tessera-auth";
    switch (authctx_check(ctx, user_id)) {
    case AUTHCTX_NOT_CALLERS:
        return "the access key is not the caller's";
    case AUTHCTX_KEY_INACTIVE:
        return "the keypair is not active";
    case AUTHCTX_USER_INACTIVE:
        return "the user is not active";
    case AUTHCTX_ACTIVE:
        break;
    }
    return NULL;
}

void caller_take_context(ts_caller *out, const char *access_key, json_t *ctx)
{
    memset(out, 0, sizeof(*out));
    ts_strlcpy(out->user_id, authctx_user_field(ctx, "id"), sizeof(out->user_id));
    ts_strlcpy(out->access_key, access_key, sizeof(out->access_key));
    ts_strlcpy(out->email, authctx_user_field(ctx, "email"), sizeof(out->email));
    ts_strlcpy(out->role, authctx_user_field(ctx, "role"), sizeof(out->role));
    ts_strlcpy(out->domain_name, authctx_user_field(ctx, "domain_name"), sizeof(out->domain_name));
    out->ctx = ctx;
}

bool caller_context(authctx *a, http_req *req, http_resp *resp, const char *access_key,
                    const char *group, json_t **ctx)
{
    long status = 0;
    ts_err err = {{0}};
    json_t *body = NULL;
    *ctx = NULL;
    if (!authctx_get(a, access_key, group, req->request_id, &status, &body, &err)) {
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

bool caller_from_request(authctx *a, http_req *req, http_resp *resp, const char *group,
                         ts_caller *out)
{
    memset(out, 0, sizeof(*out));
    const char *id, *ak;
    switch (authctx_caller_of(req, &id, &ak)) {
    case AUTHCTX_CALLER_NONE:
        http_problem(resp, 401, "auth-failed", NULL,
                     "no authenticated caller (this endpoint needs a signed request)");
        return false;
    case AUTHCTX_CALLER_BAD_KEY:
        http_problem(resp, 401, "auth-failed", NULL, "missing or malformed caller access key");
        return false;
    case AUTHCTX_CALLER_OK:
        break;
    }
    tlog_ctx_user(id);
    json_t *ctx = NULL;
    if (!caller_context(a, req, resp, ak, group, &ctx)) {
        /* An unknown key of a forwarded caller is an authentication failure. */
        if (http_resp_status(resp) == 404)
            http_problem(resp, 401, "auth-failed", NULL, "unknown caller access key");
        return false;
    }
    const char *why = caller_context_refusal(ctx, id);
    if (why) {
        http_problem(resp, 401, "auth-failed", NULL,
                     "the caller's keypair is not an active keypair of the caller: %s", why);
        json_decref(ctx);
        return false;
    }
    caller_take_context(out, ak, ctx);
    return true;
}

void caller_free(ts_caller *c)
{
    json_decref(c->ctx);
    c->ctx = NULL;
}

bool caller_is_superadmin(const ts_caller *c)
{
    return strcmp(c->role, "superadmin") == 0;
}

bool caller_is_admin(const ts_caller *c)
{
    return caller_is_superadmin(c) || strcmp(c->role, "admin") == 0;
}

bool caller_hides_user(const ts_caller *c, const char *user_id)
{
    size_t i;
    json_t *v;
    if (strcmp(c->role, "admin") != 0 || !user_id) return false;
    json_array_foreach(json_object_get(c->ctx, "domain_superadmins"), i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), user_id) == 0) return true;
    }
    return false;
}
