/* resource_groups.c: see resource_groups.h. */
#include "resource_groups.h"

#include "caller.h"
#include "libcommon/pgjson.h"

#include <stdlib.h>
#include <string.h>

static const char select_cols[] =
    "SELECT g.name, g.description, g.is_active, g.scheduler, g.agent_selector,"
    " g.allowed_session_types, g.pending_timeout, g.created_at, g.modified_at,"
    " (SELECT count(*) FROM registry.agents a WHERE a.resource_group = g.name"
    "   AND a.status = 'ALIVE')::int AS agents";

static void reply_group(http_resp *resp, PGconn *conn, const char *name, int status)
{
    char *sql = ts_asprintf("%s FROM registry.resource_groups g WHERE g.name = $1", select_cols);
    const char *p[] = {name};
    PGresult *r = pgjson_query(conn, resp, "read resource group", sql, 1, p);
    free(sql);
    if (r) pgjson_reply_one(resp, r, status, "unknown resource group %s", name);
}

static void h_list(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    reg_caller c;
    if (!caller_get_admin(req, resp, false, "resource groups", &c)) return;
    pgjson_page pg;
    PGconn *conn = NULL;
    if (!pgjson_page_parse(req, resp, &pg) || !(conn = pgjson_get(s, resp))) goto out;
    const char *active = http_query_arg(req, "is_active");
    char *sql = ts_asprintf("%s, count(*) OVER () AS total FROM registry.resource_groups g"
                            " WHERE ($1::bool IS NULL OR g.is_active = $1::bool)"
                            " ORDER BY g.name LIMIT $2::bigint OFFSET $3::bigint",
                            select_cols);
    const char *p[] = {active, pg.limit_s, pg.offset_s};
    PGresult *r = pgjson_query(conn, resp, "list resource groups", sql, 3, p);
    free(sql);
    if (r) {
        long long total = PQntuples(r) ? atoll(PQgetvalue(r, 0, PQnfields(r) - 1)) : 0;
        json_t *items = pgjson_rows_json(r);
        size_t i;
        json_t *v;
        json_array_foreach(items, i, v) json_object_del(v, "total");
        http_reply_json(resp, 200, pgjson_page_json(items, total, &pg));
        PQclear(r);
    }
out:
    pgjson_put(s, conn);
    caller_free(&c);
}

static void h_get(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    reg_caller c;
    if (!caller_get_admin(req, resp, false, "resource groups", &c)) return;
    PGconn *conn = pgjson_get(s, resp);
    if (conn) reply_group(resp, conn, http_param(req, "name"), 200);
    pgjson_put(s, conn);
    caller_free(&c);
}

/* The fields of a create or update body, as text parameters (NULL = absent). */
typedef struct rg_fields {
    const char *name, *description, *scheduler, *selector;
    char active[8], timeout[24];
    char *types; /* text[] literal */
    bool has_active, has_timeout;
} rg_fields;

static bool parse_fields(json_t *body, bool create, rg_fields *f, http_resp *resp)
{
    static const char *const keys[] = {
        "name",           "description",           "is_active",       "scheduler",
        "agent_selector", "allowed_session_types", "pending_timeout", NULL};
    memset(f, 0, sizeof(*f));
    bool active;
    long long timeout;
    if (!pgjson_only_keys(body, keys, resp) ||
        !pgjson_field_str(body, "name", create, 1, 64, &f->name, resp) ||
        !pgjson_field_str(body, "description", false, 0, 1000, &f->description, resp) ||
        !pgjson_field_bool(body, "is_active", false, &active, &f->has_active, resp) ||
        !pgjson_field_enum(body, "scheduler", false, "fifo|lifo|drf", &f->scheduler, resp) ||
        !pgjson_field_enum(body, "agent_selector", false, "concentrated|dispersed|roundrobin",
                           &f->selector, resp) ||
        !pgjson_field_int(body, "pending_timeout", false, 0, 86400 * 365, &timeout, &f->has_timeout,
                          resp))
        return false;
    if (f->has_active) ts_strlcpy(f->active, active ? "true" : "false", sizeof(f->active));
    if (f->has_timeout) snprintf(f->timeout, sizeof(f->timeout), "%lld", timeout);
    json_t *types = json_object_get(body, "allowed_session_types");
    if (types && !json_is_null(types)) {
        if (!json_is_array(types) || json_array_size(types) == 0) goto bad_types;
        char buf[128] = "{";
        size_t i;
        json_t *t;
        json_array_foreach(types, i, t)
        {
            const char *v = json_string_value(t);
            if (!v || (strcmp(v, "interactive") != 0 && strcmp(v, "batch") != 0 &&
                       strcmp(v, "inference") != 0))
                goto bad_types;
            if (strstr(buf, v)) continue;
            strcat(buf, buf[1] ? "," : "");
            strcat(buf, v);
        }
        strcat(buf, "}");
        f->types = ts_strdup(buf);
    }
    if (f->name) {
        for (const char *p = f->name; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                  (*p >= '0' && *p <= '9') ||
                  ((*p == '-' || *p == '_' || *p == '.') && p != f->name))) {
                http_problem(resp, 400, "invalid-api-params", NULL,
                             "\"name\" may hold letters, digits, '-', '_' and '.' (not first)");
                return false;
            }
    }
    return true;
bad_types:
    http_problem(resp, 400, "invalid-api-params", NULL,
                 "\"allowed_session_types\" must be a non-empty list of interactive, batch, "
                 "inference");
    return false;
}

static void h_create(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    reg_caller c;
    if (!caller_get_admin(req, resp, true, "resource groups", &c)) return;
    json_t *body = http_json_body(req, resp);
    rg_fields f = {0};
    PGconn *conn = NULL;
    if (!body || !parse_fields(body, true, &f, resp) || !(conn = pgjson_get(s, resp))) goto out;
    const char *p[] = {f.name,
                       f.description ? f.description : "",
                       f.has_active ? f.active : "true",
                       f.scheduler ? f.scheduler : "fifo",
                       f.selector ? f.selector : "concentrated",
                       f.types ? f.types : "{interactive,batch,inference}",
                       f.has_timeout ? f.timeout : "0"};
    PGresult *r = pgjson_query(conn, resp, "create resource group",
                               "INSERT INTO registry.resource_groups (name, description, is_active,"
                               " scheduler, agent_selector, allowed_session_types, pending_timeout)"
                               " VALUES ($1, $2, $3::bool, $4, $5, $6::text[], $7::int)",
                               7, p);
    if (r) {
        PQclear(r);
        reply_group(resp, conn, f.name, 201);
    }
out:
    free(f.types);
    json_decref(body);
    pgjson_put(s, conn);
    caller_free(&c);
}

static void h_update(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    reg_caller c;
    if (!caller_get_admin(req, resp, true, "resource groups", &c)) return;
    const char *name = http_param(req, "name");
    json_t *body = http_json_body(req, resp);
    rg_fields f = {0};
    PGconn *conn = NULL;
    if (!body || !parse_fields(body, false, &f, resp) || !(conn = pgjson_get(s, resp))) goto out;
    if (f.name && strcmp(f.name, name) != 0) {
        http_problem(resp, 400, "invalid-api-params", NULL, "a resource group cannot be renamed");
        goto out;
    }
    const char *p[] = {name,       f.description, f.has_active ? f.active : NULL,  f.scheduler,
                       f.selector, f.types,       f.has_timeout ? f.timeout : NULL};
    PGresult *r = pgjson_query(
        conn, resp, "update resource group",
        "UPDATE registry.resource_groups SET description = coalesce($2, description),"
        " is_active = coalesce($3::bool, is_active), scheduler = coalesce($4, scheduler),"
        " agent_selector = coalesce($5, agent_selector),"
        " allowed_session_types = coalesce($6::text[], allowed_session_types),"
        " pending_timeout = coalesce($7::int, pending_timeout), modified_at = now()"
        " WHERE name = $1",
        7, p);
    if (r) {
        PQclear(r);
        reply_group(resp, conn, name, 200);
    }
out:
    free(f.types);
    json_decref(body);
    pgjson_put(s, conn);
    caller_free(&c);
}

void resource_groups_routes(svc *s)
{
    http_router *r = svc_router(s);
    http_route(r, "GET", "/v1/admin/resource-groups", h_list, s);
    http_route(r, "POST", "/v1/admin/resource-groups", h_create, s);
    http_route(r, "GET", "/v1/admin/resource-groups/{name}", h_get, s);
    http_route(r, "PATCH", "/v1/admin/resource-groups/{name}", h_update, s);
}
