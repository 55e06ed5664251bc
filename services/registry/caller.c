/* caller.c: see caller.h. */
#include "caller.h"

#include "auth_client.h"
#include "db_common.h"
#include "libcommon/log.h"

#include <stdio.h>
#include <string.h>

bool context_get(http_req *req, http_resp *resp, const char *access_key, const char *group,
                 json_t **ctx)
{
    return caller_context(authc(), req, resp, access_key, group, ctx);
}

bool caller_get(http_req *req, http_resp *resp, const char *group, ts_caller *out)
{
    return caller_from_request(authc(), req, resp, group, out);
}

bool context_is_superadmin(const json_t *ctx)
{
    return strcmp(authctx_user_field(ctx, "role"), "superadmin") == 0;
}

char *caller_hidden_users(const ts_caller *c)
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

bool reg_req_begin(reg_req *x, void *ctx, http_req *req, http_resp *resp, req_need need,
                   const char *refusal)
{
    memset(&x->c, 0, sizeof(x->c));
    req_frame_begin(&x->fr, ctx, req, resp);
    return caller_get(req, resp, NULL, &x->c) && req_frame_role(&x->fr, x->c.role, need, refusal);
}

void reg_req_end(reg_req *x)
{
    req_frame_end(&x->fr);
    caller_free(&x->c);
}

bool caller_get_admin(http_req *req, http_resp *resp, bool write, const char *what, ts_caller *c)
{
    char refusal[200];
    snprintf(refusal, sizeof(refusal), "only %s may %s %s",
             write ? "superadmins" : "administrators", write ? "change" : "list", what);
    reg_req x;
    bool ok = reg_req_begin(&x, NULL, req, resp, write ? REQ_SUPERADMIN : REQ_ADMIN, refusal);
    *c = x.c; /* the caller is c's now */
    if (!ok) caller_free(c);
    return ok;
}
