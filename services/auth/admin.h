/* admin.h: the one skeleton of tessera-auth's handlers that act for a
 * caller: the admin REST resources (users, keypairs, domains, projects and
 * members, resource policies, resource-group access, the access-log query)
 * and /v1/role. The gateway verifies signatures and forwards /admin/X?Q to
 * /v1/admin/X?Q with X-Tessera-Caller (user id) and
 * X-Tessera-Caller-Access-Key; the role and domain are always read from our
 * own tables (caller.h, docs/internal-api.md).
 *
 * Every such handler has the same shape:
 *
 *     static void h_thing(http_req *req, http_resp *resp, void *ctx)
 *     {
 *         admin_req a;
 *         if (!admin_begin(&a, ctx, req, resp, REQ_ADMIN, "only admins may ..."))
 *             return;                          // 503, 401 or 403 answered
 *         ... a.fr.conn, a.c (the caller) ...   // answers once, problems included
 *         admin_end(&a);
 *     }
 *
 * and the resources read by one key from the path (domains, projects,
 * policies) register the shared GET and DELETE handlers below with an
 * admin_resource row as their route context. */
#ifndef AUTH_ADMIN_H
#define AUTH_ADMIN_H

#include "caller.h"
#include "libcommon/pgjson.h"
#include "libcommon/req_frame.h"
#include "events.h"
#include "libcommon/svc.h"

/* One request being served: the frame (libcommon/req_frame.h) and the
 * caller. */
typedef struct admin_req {
    req_frame fr;  /* fr.conn: the pooled connection */
    auth_caller c; /* resolved; its user id is in the log context */
} admin_req;

/* A pooled connection (503 when none), the caller (401 when it does not
 * resolve) and the role check (403 saying refusal). False after that problem
 * answer, with nothing to release; true: admin_end releases. */
bool admin_begin(admin_req *a, svc *s, http_req *req, http_resp *resp, req_need need,
                 const char *refusal) TS_MUST_CHECK;
void admin_end(admin_req *a);

/* A query argument, NULL when absent or empty. */
const char *admin_query_arg(http_req *req, const char *name);
/* The query argument name as "true" or "false" into *out (NULL when absent);
 * false after a 400 when it is anything else. */
bool admin_query_bool(http_req *req, http_resp *resp, const char *name,
                      const char **out) TS_MUST_CHECK;

/* One page of a list (pgjson_reply_page on the request's connection). */
void admin_reply_page(admin_req *a, const char *what, const char *count_sql, const char *page_sql,
                      int n, const char *const *filters, const pgjson_page *pg);

/* The event a change of one row publishes (after it committed). */
typedef void (*admin_publish_fn)(admin_req *a, auth_change change, json_t *row);

/* Run sql, which changes one row and returns it (RETURNING): answer the row
 * with status after publish(a, change, row); 404 saying missing when no row
 * matched; the query's problem when it failed. */
void admin_change_row(admin_req *a, const char *what, const char *sql, int n,
                      const char *const *params, int status, auth_change change,
                      admin_publish_fn publish, const char *missing);

/* A resource whose rows a key in the path names. Admins may use it; users
 * get 403 saying refusal. */
typedef struct admin_resource admin_resource;
struct admin_resource {
    svc *s;           /* set by the module's routes function */
    const char *noun; /* "domain": "get domain", "no such domain" */
    const char *refusal;
    /* DELETE only for superadmins (the 403 for domain admins), or NULL. */
    const char *delete_refusal;
    const char *get_sql;    /* $1 the key -> the row */
    const char *delete_sql; /* $1 the key -> the row as deleted (or deactivated) */
    /* The path's key when the caller may see that row (named in the log
     * context), else NULL after the problem answer (404 via admin_not_found). */
    const char *(*visible)(admin_req *a, const admin_resource *r);
    admin_publish_fn publish; /* after DELETE */
};

/* admin_begin for r: admins only, 403 saying r->refusal to users. */
bool admin_begin_for(admin_req *a, const admin_resource *r, http_req *req,
                     http_resp *resp) TS_MUST_CHECK;

/* 404 not-found "no such <noun>". */
void admin_not_found(const admin_resource *r, http_resp *resp);

/* GET .../{key} and DELETE .../{key} for an admin_resource (the route
 * context): the row with 200, or the problem. */
void admin_h_get(http_req *req, http_resp *resp, void *resource);
void admin_h_delete(http_req *req, http_resp *resp, void *resource);

/* The routes of a collection: GET and POST path, and GET, PATCH and DELETE
 * item (path/{key}); NULL handlers are left out. Their context is r (its s
 * set here), or s when r is NULL. */
typedef struct admin_crud {
    const char *path, *item;
    http_handler list, create, get, patch, remove;
} admin_crud;
void admin_crud_routes(svc *s, const admin_crud *crud, admin_resource *r);

#endif
