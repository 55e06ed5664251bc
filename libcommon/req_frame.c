/* req_frame.c: a handler's frame (req_frame.h). */
#include "libcommon/req_frame.h"

#include <string.h>

void req_frame_begin(req_frame *f, void *ctx, http_req *req, http_resp *resp)
{
    *f = (req_frame){.s = ctx, .req = req, .resp = resp};
}

bool req_frame_role(req_frame *f, const char *role, req_need need, const char *refusal)
{
    bool super = strcmp(role, "superadmin") == 0;
    bool ok = need == REQ_ANY || super || (need == REQ_ADMIN && strcmp(role, "admin") == 0);
    if (!ok) http_problem(f->resp, 403, "forbidden", NULL, "%s", refusal);
    return ok;
}

bool req_frame_body(req_frame *f, const char *const *keys)
{
    f->body = http_json_body(f->req, f->resp);
    return f->body && (!keys || pgjson_only_keys(f->body, keys, f->resp));
}

bool req_frame_conn(req_frame *f)
{
    f->conn = pgjson_get(f->s, f->resp);
    return f->conn != NULL;
}

void req_frame_end(req_frame *f)
{
    json_decref(f->body);
    f->body = NULL;
    if (f->conn) pgjson_put(f->s, f->conn);
    f->conn = NULL;
}
