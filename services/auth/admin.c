/* admin.c: the shared skeleton of the handlers that act for a caller (see
 * admin.h). */
#include "admin.h"

#include <stdio.h>
#include <string.h>

bool admin_begin(admin_req *a, svc *s, http_req *req, http_resp *resp, req_need need,
                 const char *refusal)
{
    memset(&a->c, 0, sizeof(a->c));
    req_frame_begin(&a->fr, s, req, resp);
    bool ok = req_frame_conn(&a->fr) && caller_resolve(a->fr.conn, req, resp, &a->c) &&
              req_frame_role(&a->fr, a->c.role, need, refusal);
    if (!ok) admin_end(a);
    return ok;
}

void admin_end(admin_req *a)
{
    req_frame_end(&a->fr);
}

const char *admin_query_arg(http_req *req, const char *name)
{
    const char *v = http_query_arg(req, name);
    return v && *v ? v : NULL;
}

bool admin_query_bool(http_req *req, http_resp *resp, const char *name, const char **out)
{
    *out = http_query_arg(req, name);
    if (!*out || strcmp(*out, "true") == 0 || strcmp(*out, "false") == 0) return true;
    http_problem(resp, 400, "invalid-api-params", NULL, "%s must be true or false", name);
    return false;
}

void admin_reply_page(admin_req *a, const char *what, const char *count_sql, const char *page_sql,
                      int n, const char *const *filters, const pgjson_page *pg)
{
    pgjson_reply_page(a->fr.conn, a->fr.resp, what, count_sql, page_sql, n, filters, pg);
}

void admin_change_row(admin_req *a, const char *what, const char *sql, int n,
                      const char *const *params, int status, auth_change change,
                      admin_publish_fn publish, const char *missing)
{
    json_t *row = pgjson_query_one(a->fr.conn, a->fr.resp, what, sql, n, params, missing);
    if (!row) return;
    publish(a, change, row);
    http_reply_json(a->fr.resp, status, row);
}

bool admin_begin_for(admin_req *a, const admin_resource *r, http_req *req, http_resp *resp)
{
    return admin_begin(a, r->s, req, resp, REQ_ADMIN, r->refusal);
}

void admin_not_found(const admin_resource *r, http_resp *resp)
{
    http_problem(resp, 404, "not-found", NULL, "no such %s", r->noun);
}

void admin_h_get(http_req *req, http_resp *resp, void *resource)
{
    const admin_resource *r = resource;
    admin_req a;
    if (!admin_begin_for(&a, r, req, resp)) return;
    const char *key = r->visible(&a, r);
    char what[96], missing[96];
    snprintf(what, sizeof(what), "get %s", r->noun);
    snprintf(missing, sizeof(missing), "no such %s", r->noun);
    json_t *row =
        key ? pgjson_query_one(a.fr.conn, resp, what, r->get_sql, 1, &key, missing) : NULL;
    if (row) http_reply_json(resp, 200, row);
    admin_end(&a);
}

void admin_h_delete(http_req *req, http_resp *resp, void *resource)
{
    const admin_resource *r = resource;
    admin_req a;
    if (!admin_begin_for(&a, r, req, resp)) return;
    const char *key = NULL;
    char what[96], missing[96];
    snprintf(what, sizeof(what), "delete %s", r->noun);
    snprintf(missing, sizeof(missing), "no such %s", r->noun);
    if (r->delete_refusal && !caller_is_superadmin(&a.c))
        http_problem(resp, 403, "forbidden", NULL, "%s", r->delete_refusal);
    else if ((key = r->visible(&a, r)))
        admin_change_row(&a, what, r->delete_sql, 1, &key, 200, AUTH_CHANGE_DELETED, r->publish,
                         missing);
    admin_end(&a);
}

void admin_crud_routes(svc *s, const admin_crud *crud, admin_resource *r)
{
    void *ctx = s;
    if (r) ctx = r, r->s = s;
    static const char *const methods[] = {"GET", "POST", "GET", "PATCH", "DELETE"};
    const http_handler handlers[] = {crud->list, crud->create, crud->get, crud->patch,
                                     crud->remove};
    for (size_t i = 0; i < TS_ARRAY_LEN(handlers); i++)
        if (handlers[i])
            http_route(svc_router(s), methods[i], i < 2 ? crud->path : crud->item, handlers[i],
                       ctx);
}
