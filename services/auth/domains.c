/* domains.c: /v1/admin/domains (see domains.h). */
#include "domains.h"

#include "admin.h"
#include "events.h"
#include "policies.h"

#include <stdlib.h>
#include <string.h>

#define DOMAIN_COLS                                                                                \
    "name, description, is_active, total_resource_slots, allowed_vfolder_hosts, created_at,"       \
    " modified_at"
#define DESCRIPTION_MAX 1000

/* $1: only this domain (a domain admin's), or NULL; $2: is_active filter or NULL. */
#define DOMAIN_FILTER                                                                              \
    " FROM auth.domains WHERE ($1::text IS NULL OR name = $1)"                                     \
    " AND ($2::bool IS NULL OR is_active = $2::bool)"

static const char count_sql[] = "SELECT count(*)" DOMAIN_FILTER;
static const char page_sql[] =
    "SELECT " DOMAIN_COLS DOMAIN_FILTER " ORDER BY name LIMIT $3::bigint OFFSET $4::bigint";
static const char get_sql[] = "SELECT " DOMAIN_COLS " FROM auth.domains WHERE name = $1";
static const char insert_sql[] =
    "INSERT INTO auth.domains (name, description, is_active, total_resource_slots,"
    " allowed_vfolder_hosts) VALUES ($1, COALESCE($2, ''), COALESCE($3::bool, true),"
    " COALESCE($4::jsonb, '{}'::jsonb), COALESCE($5::jsonb, '{}'::jsonb)) RETURNING " DOMAIN_COLS;
/* NULL leaves a column as it is. */
static const char update_sql[] =
    "UPDATE auth.domains SET description = COALESCE($2, description),"
    " is_active = COALESCE($3::bool, is_active),"
    " total_resource_slots = COALESCE($4::jsonb, total_resource_slots),"
    " allowed_vfolder_hosts = COALESCE($5::jsonb, allowed_vfolder_hosts), modified_at = now()"
    " WHERE name = $1 RETURNING " DOMAIN_COLS;
static const char deactivate_sql[] =
    "UPDATE auth.domains SET is_active = false, modified_at = now() WHERE name = $1"
    " RETURNING " DOMAIN_COLS;

/* Connection and resolved caller, or NULL after a problem. Users get 403. */
static PGconn *open_as_admin(svc *s, http_req *req, http_resp *resp, auth_caller *c)
{
    PGconn *conn = db_get(s, resp);
    if (!conn) return NULL;
    if (!caller_resolve(conn, req, resp, c)) {
        db_put(s, conn);
        return NULL;
    }
    if (!caller_is_admin(c)) {
        http_problem(resp, 403, "forbidden", NULL, "only admins may manage domains");
        db_put(s, conn);
        return NULL;
    }
    return conn;
}

static void not_found(http_resp *resp)
{
    http_problem(resp, 404, "not-found", NULL, "no such domain");
}

/* The {name} parameter when the caller may see that domain; else a 404. */
static const char *visible_name(http_req *req, http_resp *resp, const auth_caller *c)
{
    const char *name = http_param(req, "name");
    if (!policies_name_ok(name) || !caller_can_see_domain(c, name)) {
        not_found(resp);
        return NULL;
    }
    return name;
}

static void h_list(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    db_page pg;
    if (!db_page_parse(req, resp, &pg)) return;
    const char *active = http_query_arg(req, "is_active");
    if (active && strcmp(active, "true") != 0 && strcmp(active, "false") != 0) {
        http_problem(resp, 400, "invalid-api-params", NULL, "is_active must be true or false");
        return;
    }
    auth_caller c;
    PGconn *conn = open_as_admin(s, req, resp, &c);
    if (!conn) return;
    const char *params[] = {caller_is_superadmin(&c) ? NULL : c.domain_name, active, pg.limit_s,
                            pg.offset_s};
    PGresult *n = db_query(conn, resp, "list domains", count_sql, 2, params);
    PGresult *r = n ? db_query(conn, resp, "list domains", page_sql, 4, params) : NULL;
    if (r)
        http_reply_json(resp, 200, db_page_json(db_rows_json(r), atoll(PQgetvalue(n, 0, 0)), &pg));
    PQclear(n);
    PQclear(r);
    db_put(s, conn);
}

static void h_get(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    auth_caller c;
    PGconn *conn = open_as_admin(s, req, resp, &c);
    if (!conn) return;
    const char *name = visible_name(req, resp, &c);
    const char *params[] = {name};
    PGresult *r = name ? db_query(conn, resp, "get domain", get_sql, 1, params) : NULL;
    if (r && PQntuples(r) == 1)
        http_reply_json(resp, 200, db_row_json(r, 0));
    else if (r)
        not_found(resp);
    PQclear(r);
    db_put(s, conn);
}

/* The fields of a create or patch body as $2..$5; false after a 400. */
typedef struct domain_fields {
    const char *description;
    char active[8];
    json_t *slots, *hosts;
    char *slots_s, *hosts_s;
    const char *v[5];
} domain_fields;

static bool parse_fields(json_t *body, domain_fields *f, http_resp *resp)
{
    bool active, present;
    if (!db_field_str(body, "description", false, 0, DESCRIPTION_MAX, &f->description, resp) ||
        !db_field_bool(body, "is_active", false, &active, &present, resp) ||
        !policies_field_slots(body, "total_resource_slots", &f->slots, resp) ||
        !policies_field_vfolder_hosts(body, "allowed_vfolder_hosts", &f->hosts, resp))
        return false;
    f->v[1] = f->description;
    if (present) f->v[2] = strcpy(f->active, active ? "true" : "false");
    if (f->slots) f->v[3] = f->slots_s = json_dumps(f->slots, JSON_COMPACT | JSON_SORT_KEYS);
    if (f->hosts) f->v[4] = f->hosts_s = json_dumps(f->hosts, JSON_COMPACT | JSON_SORT_KEYS);
    return true;
}

static void fields_free(domain_fields *f)
{
    json_decref(f->slots);
    json_decref(f->hosts);
    free(f->slots_s);
    free(f->hosts_s);
}

/* Answer the changed row (r, one row, committed) and publish DomainChanged. */
static void reply_and_publish(svc *s, http_req *req, http_resp *resp, int status,
                              auth_change change, PGresult *r)
{
    json_t *row = db_row_json(r, 0);
    events_domain_changed(s, req->request_id, change,
                          json_string_value(json_object_get(row, "name")),
                          json_is_true(json_object_get(row, "is_active")));
    http_reply_json(resp, status, row);
}

static void h_create(http_req *req, http_resp *resp, void *ctx)
{
    static const char *const keys[] = {
        "name", "description", "is_active", "total_resource_slots", "allowed_vfolder_hosts", NULL};
    svc *s = ctx;
    auth_caller c;
    PGconn *conn = open_as_admin(s, req, resp, &c);
    if (!conn) return;
    if (!caller_is_superadmin(&c)) {
        http_problem(resp, 403, "forbidden", NULL, "only superadmins may create domains");
        db_put(s, conn);
        return;
    }
    json_t *body = http_json_body(req, resp);
    domain_fields f = {0};
    if (body && db_only_keys(body, keys, resp) &&
        policies_field_name(body, "name", true, &f.v[0], resp) && parse_fields(body, &f, resp)) {
        PGresult *r = db_query(conn, resp, "create domain", insert_sql, 5, f.v);
        if (r) reply_and_publish(s, req, resp, 201, AUTH_CHANGE_CREATED, r);
        PQclear(r);
    }
    fields_free(&f);
    json_decref(body);
    db_put(s, conn);
}

static void h_patch(http_req *req, http_resp *resp, void *ctx)
{
    static const char *const keys[] = {"description", "is_active", "total_resource_slots",
                                       "allowed_vfolder_hosts", NULL};
    svc *s = ctx;
    auth_caller c;
    PGconn *conn = open_as_admin(s, req, resp, &c);
    if (!conn) return;
    const char *name = visible_name(req, resp, &c);
    json_t *body = name ? http_json_body(req, resp) : NULL;
    domain_fields f = {0};
    bool ok = body && db_only_keys(body, keys, resp);
    if (ok && !caller_is_superadmin(&c) && json_object_size(body) > 0 &&
        (json_object_size(body) > 1 || !json_object_get(body, "description"))) {
        http_problem(resp, 403, "forbidden", NULL,
                     "domain admins may change only their domain's description");
        ok = false;
    }
    if (ok && parse_fields(body, &f, resp)) {
        f.v[0] = name;
        PGresult *r = db_query(conn, resp, "patch domain", update_sql, 5, f.v);
        if (r && PQntuples(r) == 1)
            reply_and_publish(s, req, resp, 200, AUTH_CHANGE_UPDATED, r);
        else if (r)
            not_found(resp);
        PQclear(r);
    }
    fields_free(&f);
    json_decref(body);
    db_put(s, conn);
}

/* DELETE deactivates: projects, users and keypairs stay, so the domain can
 * be reactivated with PATCH {"is_active": true}. */
static void h_delete(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    auth_caller c;
    PGconn *conn = open_as_admin(s, req, resp, &c);
    if (!conn) return;
    if (!caller_is_superadmin(&c)) {
        http_problem(resp, 403, "forbidden", NULL, "only superadmins may delete domains");
        db_put(s, conn);
        return;
    }
    const char *name = visible_name(req, resp, &c);
    const char *params[] = {name};
    PGresult *r = name ? db_query(conn, resp, "delete domain", deactivate_sql, 1, params) : NULL;
    if (r && PQntuples(r) == 1)
        reply_and_publish(s, req, resp, 200, AUTH_CHANGE_DELETED, r);
    else if (r)
        not_found(resp);
    PQclear(r);
    db_put(s, conn);
}

void domains_routes(svc *s)
{
    http_router *r = svc_router(s);
    http_route(r, "GET", "/v1/admin/domains", h_list, s);
    http_route(r, "POST", "/v1/admin/domains", h_create, s);
    http_route(r, "GET", "/v1/admin/domains/{name}", h_get, s);
    http_route(r, "PATCH", "/v1/admin/domains/{name}", h_patch, s);
    http_route(r, "DELETE", "/v1/admin/domains/{name}", h_delete, s);
}
