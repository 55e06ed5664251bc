/* caller.c: see caller.h. */
#include "caller.h"

#include "auth_client.h"
#include "db_common.h"
#include "libcommon/log.h"

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

bool caller_get_admin(http_req *req, http_resp *resp, bool write, const char *what, ts_caller *c)
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
