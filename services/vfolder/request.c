/* request.c: the common steps of a handler (see request.h). */
#include "request.h"

#include "files.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"

#include <string.h>
#include <unistd.h>

bool vf_req_begin(vf_req *x, void *ctx, http_req *req, http_resp *resp)
{
    memset(x, 0, sizeof(*x));
    x->root = -1;
    req_frame_begin(&x->fr, ctx, req, resp);
    if (!vf_caller_get(x->fr.s, req, resp, &x->c)) return false;
    tlog_ctx_user(x->c.user_id);
    return true;
}

bool vf_req_body(vf_req *x, const char *const *keys)
{
    return req_frame_body(&x->fr, keys);
}

bool vf_req_folder(vf_req *x, vf_perm need)
{
    const char *name = x->name ? x->name : http_param(x->fr.req, "name");
    if (!vf_resolve(x->fr.s, &x->c, name, need, &x->f, x->fr.resp)) return false;
    tlog_ctx_entity("folder", x->f.id);
    return true;
}

bool vf_req_host_allows(vf_req *x, const char *host_perm, bool project_hosts, const char *doing)
{
    const json_t *hosts = project_hosts ? vf_folder_project_hosts(&x->c, &x->f) : NULL;
    if (vf_caller_host_allows(&x->c, hosts, x->f.host, host_perm) ||
        vf_caller_admin_of(&x->c, x->f.domain_name))
        return true;
    http_problem(x->fr.resp, 403, "forbidden", NULL, "your policies do not allow %s host %s", doing,
                 x->f.host);
    return false;
}

bool vf_req_exec(vf_req *x, const char *what, const char *sql, int n_params,
                 const char *const *params)
{
    PGconn *conn = pgjson_get(x->fr.s, x->fr.resp);
    if (!conn) return false;
    PGresult *r = pgjson_query(conn, x->fr.resp, what, sql, n_params, params);
    PQclear(r);
    pgjson_put(x->fr.s, conn);
    return r != NULL;
}

bool vf_req_root(vf_req *x, const char *what)
{
    int err;
    if (vf_fs_open_root(x->f.host_path, &x->root, &err)) return true;
    vf_fs_problem(x->fr.resp, err, what, "");
    return false;
}

void vf_req_end(vf_req *x)
{
    if (x->root >= 0) close(x->root);
    x->root = -1;
    req_frame_end(&x->fr);
    caller_free(&x->c);
}
