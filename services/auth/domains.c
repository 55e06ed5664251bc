/* domains.c: /v1/admin/domains (see domains.h). */
#include "domains.h"

#include "admin.h"
#include "events.h"
#include "libcommon/log.h"
#include "limits.h"

#include <string.h>

#define DOMAIN_COLS                                                                                \
    "name, description, is_active, total_resource_slots, allowed_vfolder_hosts, idle_timeout,"     \
    " created_at, modified_at"

/* $1: only this domain (a domain admin's), or NULL; $2: is_active filter or NULL. */
#define DOMAIN_FILTER                                                                              \
    " FROM auth.domains WHERE ($1::text IS NULL OR name = $1)"                                     \
    " AND ($2::bool IS NULL OR is_active = $2::bool)"

static const char count_sql[] = "SELECT count(*)" DOMAIN_FILTER;
static const char page_sql[] =
    "SELECT " DOMAIN_COLS DOMAIN_FILTER " ORDER BY name LIMIT $3::bigint OFFSET $4::bigint";
static const char insert_sql[] =
    "INSERT INTO auth.domains (name, description, is_active, total_resource_slots,"
    " allowed_vfolder_hosts, idle_timeout) VALUES ($1, COALESCE($2, ''), COALESCE($3::bool, true),"
    " COALESCE($4::jsonb, '{}'::jsonb), COALESCE($5::jsonb, '{}'::jsonb), COALESCE($6::int, 0))"
    " RETURNING " DOMAIN_COLS;
/* NULL leaves a column as it is. */
static const char update_sql[] =
    "UPDATE auth.domains SET description = COALESCE($2, description),"
    " is_active = COALESCE($3::bool, is_active),"
    " total_resource_slots = COALESCE($4::jsonb, total_resource_slots),"
    " allowed_vfolder_hosts = COALESCE($5::jsonb, allowed_vfolder_hosts),"
    " idle_timeout = COALESCE($6::int, idle_timeout), modified_at = now()"
    " WHERE name = $1 RETURNING " DOMAIN_COLS;

#define MISSING "no such domain"

/* DomainChanged for a changed row (committed). */
static void publish(admin_req *a, auth_change change, json_t *row)
{
    events_domain_changed(a->fr.s, a->fr.req->request_id, change,
                          json_string_value(json_object_get(row, "name")),
                          json_is_true(json_object_get(row, "is_active")),
                          (int)json_integer_value(json_object_get(row, "idle_timeout")));
}

/* The {name} parameter when the caller may see that domain; else a 404. */
static const char *visible_name(admin_req *a, const admin_resource *r)
{
    const char *name = http_param(a->fr.req, "name");
    if (!limits_name_ok(name) || !caller_can_see_domain(&a->c, name)) {
        admin_not_found(r, a->fr.resp);
        return NULL;
    }
    tlog_ctx_entity("domain", name);
    return name;
}

/* DELETE deactivates: projects, users and keypairs stay, so the domain can
 * be reactivated with PATCH {"is_active": true}. */
static admin_resource domains = {
    .noun = "domain",
    .refusal = "only admins may manage domains",
    .delete_refusal = "only superadmins may delete domains",
    .get_sql = "SELECT " DOMAIN_COLS " FROM auth.domains WHERE name = $1",
    .delete_sql = "UPDATE auth.domains SET is_active = false, modified_at = now() WHERE name = $1"
                  " RETURNING " DOMAIN_COLS,
    .visible = visible_name,
    .publish = publish,
};

static void h_list(http_req *req, http_resp *resp, void *ctx)
{
    pgjson_page pg;
    const char *active;
    admin_req a;
    if (!pgjson_page_parse(req, resp, &pg) || !admin_query_bool(req, resp, "is_active", &active) ||
        !admin_begin_for(&a, ctx, req, resp))
        return;
    const char *filters[] = {caller_is_superadmin(&a.c) ? NULL : a.c.domain_name, active};
    admin_reply_page(&a, "list domains", count_sql, page_sql, 2, filters, &pg);
    admin_end(&a);
}

/* Whether the caller may make this create or patch: superadmins create and
 * change every field; domain admins change their domain's description and
 * idle_timeout (a cap on their own sessions). */
static bool write_allowed(admin_req *a, bool create, json_t *body)
{
    const char *why = NULL;
    if (caller_is_superadmin(&a->c))
        return true;
    else if (create)
        why = "only superadmins may create domains";
    else {
        const char *key;
        json_t *v;
        json_object_foreach(body, key, v)
        {
            if (strcmp(key, "description") != 0 && strcmp(key, "idle_timeout") != 0)
                why = "domain admins may change only their domain's description and idle_timeout";
        }
    }
    if (why) http_problem(a->fr.resp, 403, "forbidden", NULL, "%s", why);
    return !why;
}

/* POST (create) or PATCH .../{name}. */
static void h_write(http_req *req, http_resp *resp, void *ctx)
{
    admin_resource *r = ctx;
    bool create = strcmp(req->method, "POST") == 0;
    static const char *const keys[] = {
        "name",         "description", "is_active", "total_resource_slots", "allowed_vfolder_hosts",
        "idle_timeout", NULL};
    admin_req a;
    if (!admin_begin_for(&a, r, req, resp)) return;
    const char *name = NULL;
    json_t *body = NULL;
    limits_fields f = {0};
    if (create ? write_allowed(&a, true, NULL) : (name = visible_name(&a, r)) != NULL)
        body = http_json_body(req, resp);
    if (body && pgjson_only_keys(body, create ? keys : keys + 1, resp) &&
        (create ? limits_field_name(body, "name", true, &name, resp)
                : write_allowed(&a, false, body)) &&
        limits_fields_parse(body, &f, resp)) {
        tlog_ctx_entity("domain", name);
        const char *v[] = {name, f.description, f.is_active, f.slots, f.hosts, f.idle_timeout};
        if (create)
            admin_change_row(&a, "create domain", insert_sql, 6, v, 201, AUTH_CHANGE_CREATED,
                             publish, MISSING);
        else
            admin_change_row(&a, "patch domain", update_sql, 6, v, 200, AUTH_CHANGE_UPDATED,
                             publish, MISSING);
    }
    limits_fields_free(&f);
    json_decref(body);
    admin_end(&a);
}

void domains_routes(svc *s)
{
    static const admin_crud routes = {
        "/v1/admin/domains", "/v1/admin/domains/{name}", h_list, h_write, admin_h_get, h_write,
        admin_h_delete};
    admin_crud_routes(s, &routes, &domains);
}
