/* projects.c: /v1/admin/projects and their members (see projects.h). */
#include "projects.h"

#include "admin.h"
#include "events.h"
#include "policies.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROJECT_COLS                                                                               \
    "id, name, domain_name, description, is_active, total_resource_slots,"                         \
    " allowed_vfolder_hosts, resource_policy, created_at, modified_at"
#define DESCRIPTION_MAX 1000
#define MEMBERS_MAX 1000

/* $1 domain or NULL, $2 is_active or NULL. */
#define PROJECT_FILTER                                                                             \
    " FROM auth.projects WHERE ($1::text IS NULL OR domain_name = $1)"                             \
    " AND ($2::bool IS NULL OR is_active = $2::bool)"

static const char count_sql[] = "SELECT count(*)" PROJECT_FILTER;
static const char page_sql[] = "SELECT " PROJECT_COLS PROJECT_FILTER
                               " ORDER BY domain_name, name, id LIMIT $3::bigint OFFSET $4::bigint";
static const char get_sql[] = "SELECT " PROJECT_COLS " FROM auth.projects WHERE id = $1::uuid";
/* The project's domain, locked against concurrent changes of the project. */
static const char lock_sql[] =
    "SELECT domain_name FROM auth.projects WHERE id = $1::uuid FOR UPDATE";
static const char insert_sql[] =
    "INSERT INTO auth.projects (id, name, domain_name, description, is_active,"
    " total_resource_slots, allowed_vfolder_hosts, resource_policy) VALUES ($1::uuid, $2, $3,"
    " COALESCE($4, ''), COALESCE($5::bool, true), COALESCE($6::jsonb, '{}'::jsonb),"
    " COALESCE($7::jsonb, '{}'::jsonb), COALESCE($8, 'default'))"
    " RETURNING " PROJECT_COLS;
/* The same parameters as insert_sql, $3 (the domain) unused: NULL leaves a
 * column as it is. */
static const char update_sql[] =
    "UPDATE auth.projects SET name = COALESCE($2, name), description = COALESCE($4, description),"
    " is_active = COALESCE($5::bool, is_active),"
    " total_resource_slots = COALESCE($6::jsonb, total_resource_slots),"
    " allowed_vfolder_hosts = COALESCE($7::jsonb, allowed_vfolder_hosts),"
    " resource_policy = COALESCE($8, resource_policy), modified_at = now()"
    " WHERE id = $1::uuid AND $3::text IS NULL RETURNING " PROJECT_COLS;
static const char deactivate_sql[] =
    "UPDATE auth.projects SET is_active = false, modified_at = now() WHERE id = $1::uuid"
    " RETURNING " PROJECT_COLS;

/* Members: $1 project, $2 whether the caller is a superadmin (domain admins
 * do not see superadmins). */
#define MEMBER_FILTER                                                                              \
    " FROM auth.project_members m JOIN auth.users u ON u.id = m.user_id"                           \
    " WHERE m.project_id = $1::uuid AND ($2::bool OR u.role <> 'superadmin')"
static const char members_count_sql[] = "SELECT count(*)" MEMBER_FILTER;
static const char members_page_sql[] =
    "SELECT u.id, u.email, u.username, u.full_name, u.role, u.status, u.domain_name,"
    " m.added_at" MEMBER_FILTER " ORDER BY u.email LIMIT $3::bigint OFFSET $4::bigint";

/* Resolve the given ids or emails ($1, a JSON array of text) in order to user
 * ids, NULL where the entry is not an eligible user: for adding ($4 false), a
 * user of domain $2 that is not deleted; for removing ($4 true), a user of
 * domain $2 or a member of project $5. $3: superadmins are eligible. */
#define RESOLVE_SQL(match)                                                                         \
    "SELECT w.v, u.id::text FROM json_array_elements_text($1::json) WITH ORDINALITY AS w(v, i)"    \
    " LEFT JOIN auth.users u ON " match " AND ($3::bool OR u.role <> 'superadmin') AND ("          \
    "   (u.domain_name = $2 AND (u.status <> 'deleted' OR $4::bool)) OR ($4::bool AND EXISTS ("    \
    "   SELECT 1 FROM auth.project_members pm WHERE pm.project_id = $5::uuid"                      \
    "   AND pm.user_id = u.id))) ORDER BY w.i"
static const char resolve_ids_sql[] = RESOLVE_SQL("u.id = w.v::uuid");
static const char resolve_emails_sql[] = RESOLVE_SQL("lower(u.email) = lower(w.v)");
static const char add_sql[] =
    "INSERT INTO auth.project_members (project_id, user_id)"
    " SELECT DISTINCT $1::uuid, x::uuid FROM json_array_elements_text($2::json) x"
    " ON CONFLICT DO NOTHING RETURNING user_id::text";
static const char remove_sql[] =
    "DELETE FROM auth.project_members WHERE project_id = $1::uuid AND user_id IN"
    " (SELECT x::uuid FROM json_array_elements_text($2::json) x) RETURNING user_id::text";

/* ---- common --------------------------------------------------------------- */

static PGconn *open_as_admin(svc *s, http_req *req, http_resp *resp, auth_caller *c)
{
    PGconn *conn = db_get(s, resp);
    if (!conn) return NULL;
    if (!caller_resolve(conn, req, resp, c)) {
        db_put(s, conn);
        return NULL;
    }
    if (!caller_is_admin(c)) {
        http_problem(resp, 403, "forbidden", NULL, "only admins may manage projects");
        db_put(s, conn);
        return NULL;
    }
    return conn;
}

static void not_found(http_resp *resp)
{
    http_problem(resp, 404, "not-found", NULL, "no such project");
}

/* The {id} parameter when the project exists and the caller may see its
 * domain (its domain into domain, when given); else a 404 (or 500). With
 * lock, the project row is locked (inside a transaction). */
static const char *visible_project(PGconn *conn, http_req *req, http_resp *resp,
                                   const auth_caller *c, bool lock, char *domain, size_t size)
{
    const char *id = http_param(req, "id");
    if (!id || !ts_uuid_valid(id)) {
        not_found(resp);
        return NULL;
    }
    const char *params[] = {id};
    PGresult *r = db_query(
        conn, resp, "find project",
        lock ? lock_sql : "SELECT domain_name FROM auth.projects WHERE id = $1::uuid", 1, params);
    if (!r) return NULL;
    bool ok = PQntuples(r) == 1 && caller_can_see_domain(c, PQgetvalue(r, 0, 0));
    if (ok && domain) ts_strlcpy(domain, PQgetvalue(r, 0, 0), size);
    PQclear(r);
    if (!ok) not_found(resp);
    return ok ? id : NULL;
}

/* ---- projects --------------------------------------------------------------- */

static void h_list(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    db_page pg;
    if (!db_page_parse(req, resp, &pg)) return;
    const char *domain = http_query_arg(req, "domain");
    const char *active = http_query_arg(req, "is_active");
    if (domain && !*domain) domain = NULL;
    if (active && strcmp(active, "true") != 0 && strcmp(active, "false") != 0) {
        http_problem(resp, 400, "invalid-api-params", NULL, "is_active must be true or false");
        return;
    }
    if (domain && !policies_name_ok(domain)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "domain must be a domain name");
        return;
    }
    auth_caller c;
    PGconn *conn = open_as_admin(s, req, resp, &c);
    if (!conn) return;
    if (domain && !caller_can_see_domain(&c, domain)) {
        http_problem(resp, 403, "forbidden", NULL, "domain admins may list only their own domain");
        db_put(s, conn);
        return;
    }
    if (!caller_is_superadmin(&c)) domain = c.domain_name;
    const char *params[] = {domain, active, pg.limit_s, pg.offset_s};
    PGresult *n = db_query(conn, resp, "list projects", count_sql, 2, params);
    PGresult *r = n ? db_query(conn, resp, "list projects", page_sql, 4, params) : NULL;
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
    const char *id = visible_project(conn, req, resp, &c, false, NULL, 0);
    const char *params[] = {id};
    PGresult *r = id ? db_query(conn, resp, "get project", get_sql, 1, params) : NULL;
    if (r && PQntuples(r) == 1)
        http_reply_json(resp, 200, db_row_json(r, 0));
    else if (r)
        not_found(resp);
    PQclear(r);
    db_put(s, conn);
}

/* Body fields as $2..$8 ($1 is the id); false after a 400. */
typedef struct project_fields {
    const char *v[8];
    char active[8];
    json_t *slots, *hosts;
    char *slots_s, *hosts_s;
} project_fields;

static bool parse_fields(json_t *body, bool create, project_fields *f, http_resp *resp)
{
    bool active, present;
    if (!policies_field_name(body, "name", create, &f->v[1], resp) ||
        !db_field_str(body, "description", false, 0, DESCRIPTION_MAX, &f->v[3], resp) ||
        !db_field_bool(body, "is_active", false, &active, &present, resp) ||
        !policies_field_slots(body, "total_resource_slots", &f->slots, resp) ||
        !policies_field_vfolder_hosts(body, "allowed_vfolder_hosts", &f->hosts, resp) ||
        !policies_field_name(body, "resource_policy", false, &f->v[7], resp))
        return false;
    if (present) f->v[4] = strcpy(f->active, active ? "true" : "false");
    if (f->slots) f->v[5] = f->slots_s = json_dumps(f->slots, JSON_COMPACT | JSON_SORT_KEYS);
    if (f->hosts) f->v[6] = f->hosts_s = json_dumps(f->hosts, JSON_COMPACT | JSON_SORT_KEYS);
    return true;
}

/* resource_policy names a project resource policy (NULL: not given). */
static bool _policy_known(PGconn *conn, const char *name, http_resp *resp)
{
    if (!name) return true;
    const char *p[] = {name};
    PGresult *r = db_query(conn, resp, "read project resource policy",
                           "SELECT 1 FROM auth.project_resource_policies WHERE name = $1", 1, p);
    if (!r) return false;
    bool ok = PQntuples(r) == 1;
    PQclear(r);
    if (!ok)
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "resource_policy: unknown project resource policy %s", name);
    return ok;
}

static void fields_free(project_fields *f)
{
    json_decref(f->slots);
    json_decref(f->hosts);
    free(f->slots_s);
    free(f->hosts_s);
}

/* Answer the changed row (r, one row, committed) and publish ProjectChanged. */
static void reply_and_publish(svc *s, http_req *req, http_resp *resp, int status,
                              auth_change change, PGresult *r)
{
    json_t *row = db_row_json(r, 0);
    events_project_changed(s, req->request_id, change, row);
    http_reply_json(resp, status, row);
}

static void h_create(http_req *req, http_resp *resp, void *ctx)
{
    static const char *const keys[] = {"name",
                                       "domain_name",
                                       "description",
                                       "is_active",
                                       "total_resource_slots",
                                       "allowed_vfolder_hosts",
                                       "resource_policy",
                                       NULL};
    svc *s = ctx;
    auth_caller c;
    PGconn *conn = open_as_admin(s, req, resp, &c);
    if (!conn) return;
    json_t *body = http_json_body(req, resp);
    project_fields f = {{0}};
    char id[TS_UUID_STRLEN];
    if (body && db_only_keys(body, keys, resp) &&
        policies_field_name(body, "domain_name", false, &f.v[2], resp) &&
        parse_fields(body, true, &f, resp) && _policy_known(conn, f.v[7], resp)) {
        if (!f.v[2]) f.v[2] = c.domain_name; /* default: the caller's domain */
        if (!caller_can_manage_domain(&c, f.v[2])) {
            http_problem(resp, 403, "forbidden", NULL,
                         "domain admins may create projects only in their own domain");
        } else {
            ts_uuid4(id);
            f.v[0] = id;
            PGresult *r = db_query(conn, resp, "create project", insert_sql, 8, f.v);
            if (r) reply_and_publish(s, req, resp, 201, AUTH_CHANGE_CREATED, r);
            PQclear(r);
        }
    }
    fields_free(&f);
    json_decref(body);
    db_put(s, conn);
}

static void h_patch(http_req *req, http_resp *resp, void *ctx)
{
    static const char *const keys[] = {"name",
                                       "description",
                                       "is_active",
                                       "total_resource_slots",
                                       "allowed_vfolder_hosts",
                                       "resource_policy",
                                       NULL};
    svc *s = ctx;
    auth_caller c;
    PGconn *conn = open_as_admin(s, req, resp, &c);
    if (!conn) return;
    const char *id = visible_project(conn, req, resp, &c, false, NULL, 0);
    json_t *body = id ? http_json_body(req, resp) : NULL;
    project_fields f = {{0}};
    if (body && db_only_keys(body, keys, resp) && parse_fields(body, false, &f, resp) &&
        _policy_known(conn, f.v[7], resp)) {
        f.v[0] = id;
        PGresult *r = db_query(conn, resp, "patch project", update_sql, 8, f.v);
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

/* DELETE deactivates; members and folders stay. */
static void h_delete(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    auth_caller c;
    PGconn *conn = open_as_admin(s, req, resp, &c);
    if (!conn) return;
    const char *id = visible_project(conn, req, resp, &c, false, NULL, 0);
    const char *params[] = {id};
    PGresult *r = id ? db_query(conn, resp, "delete project", deactivate_sql, 1, params) : NULL;
    if (r && PQntuples(r) == 1)
        reply_and_publish(s, req, resp, 200, AUTH_CHANGE_DELETED, r);
    else if (r)
        not_found(resp);
    PQclear(r);
    db_put(s, conn);
}

/* ---- members ---------------------------------------------------------------- */

static void h_members_list(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    db_page pg;
    if (!db_page_parse(req, resp, &pg)) return;
    auth_caller c;
    PGconn *conn = open_as_admin(s, req, resp, &c);
    if (!conn) return;
    const char *id = visible_project(conn, req, resp, &c, false, NULL, 0);
    const char *params[] = {id, caller_is_superadmin(&c) ? "true" : "false", pg.limit_s,
                            pg.offset_s};
    PGresult *n = id ? db_query(conn, resp, "list members", members_count_sql, 2, params) : NULL;
    PGresult *r = n ? db_query(conn, resp, "list members", members_page_sql, 4, params) : NULL;
    if (r)
        http_reply_json(resp, 200, db_page_json(db_rows_json(r), atoll(PQgetvalue(n, 0, 0)), &pg));
    PQclear(n);
    PQclear(r);
    db_put(s, conn);
}

/* {"user_ids": [...]} or {"emails": [...]}: the array as JSON text in
 * *list_text (free it); *by_email says which. False after a 400. */
static bool parse_member_body(json_t *body, char **list_text, bool *by_email, http_resp *resp)
{
    static const char *const keys[] = {"user_ids", "emails", NULL};
    if (!db_only_keys(body, keys, resp)) return false;
    json_t *ids = json_object_get(body, "user_ids"), *emails = json_object_get(body, "emails");
    if (!!ids == !!emails) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "give exactly one of \"user_ids\" and \"emails\"");
        return false;
    }
    *by_email = emails != NULL;
    json_t *arr = ids ? ids : emails;
    const char *key = ids ? "user_ids" : "emails";
    if (!json_is_array(arr) || json_array_size(arr) < 1 || json_array_size(arr) > MEMBERS_MAX) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "\"%s\" must be an array of 1 to %d strings", key, MEMBERS_MAX);
        return false;
    }
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        const char *str = json_string_value(v);
        bool ok = str && strlen(str) == json_string_length(v);
        if (ok && ids) ok = ts_uuid_valid(str);
        if (ok && emails) {
            size_t n = strlen(str);
            ok = n >= 3 && n <= 254;
            for (const unsigned char *p = (const unsigned char *)str; ok && *p; p++)
                ok = *p >= 0x20 && *p != 0x7f;
        }
        if (!ok) {
            http_problem(resp, 400, "invalid-api-params", NULL, "\"%s\"[%zu] must be %s", key, i,
                         ids ? "a user id (UUID)" : "an email address (3 to 254 bytes)");
            return false;
        }
    }
    *list_text = json_dumps(arr, JSON_COMPACT);
    return true;
}

/* Add (or remove) members in one transaction: lock the project, resolve
 * every entry (all or nothing), then insert (or delete). The answer lists
 * the user ids that changed and those that were already so. */
static void change_members(svc *s, http_req *req, http_resp *resp, bool removing)
{
    auth_caller c;
    PGconn *conn = open_as_admin(s, req, resp, &c);
    if (!conn) return;
    json_t *body = http_json_body(req, resp);
    char *list = NULL, domain[AUTH_NAME_MAX];
    bool by_email = false;
    if (!body || !parse_member_body(body, &list, &by_email, resp) || !db_begin(conn, resp)) {
        free(list);
        json_decref(body);
        db_put(s, conn);
        return;
    }
    const char *id = visible_project(conn, req, resp, &c, true, domain, sizeof(domain));
    PGresult *res = NULL, *chg = NULL;
    json_t *wanted = json_array();
    if (id) {
        const char *params[] = {list, domain, caller_is_superadmin(&c) ? "true" : "false",
                                removing ? "true" : "false", id};
        res = db_query(conn, resp, "resolve users", by_email ? resolve_emails_sql : resolve_ids_sql,
                       5, params);
    }
    bool ok = res != NULL;
    for (int i = 0; ok && i < PQntuples(res); i++) {
        if (PQgetisnull(res, i, 1)) {
            char q[300];
            ts_strlcpy(q, PQgetvalue(res, i, 0), sizeof(q));
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "%s \"%s\" is not a user of the project's domain \"%s\"",
                         by_email ? "email" : "user id", q, domain);
            ok = false;
        } else {
            json_array_append_new(wanted, json_string(PQgetvalue(res, i, 1)));
        }
    }
    char *wanted_s = ok ? json_dumps(wanted, JSON_COMPACT) : NULL;
    if (ok) {
        const char *params[] = {id, wanted_s};
        chg = db_query(conn, resp, removing ? "remove members" : "add members",
                       removing ? remove_sql : add_sql, 2, params);
    }
    if (chg && db_commit(conn, resp)) {
        json_t *changed = json_array(), *same = json_array(), *seen = json_object();
        for (int i = 0; i < PQntuples(chg); i++) {
            json_array_append_new(changed, json_string(PQgetvalue(chg, i, 0)));
            json_object_set_new(seen, PQgetvalue(chg, i, 0), json_true());
        }
        size_t i;
        json_t *v;
        json_array_foreach(wanted, i, v)
        {
            const char *uid = json_string_value(v);
            if (!json_object_get(seen, uid)) {
                json_array_append(same, v);
                json_object_set_new(seen, uid, json_true());
            }
        }
        json_decref(seen);
        if (json_array_size(changed) > 0)
            events_project_members_changed(s, req->request_id, id, changed, removing);
        http_reply_json(resp, 200,
                        json_pack("{s:s, s:o, s:o}", "project_id", id,
                                  removing ? "removed" : "added", changed, "unchanged", same));
    } else if (!chg) {
        pg_rollback(conn);
    }
    PQclear(res);
    PQclear(chg);
    free(wanted_s);
    json_decref(wanted);
    free(list);
    json_decref(body);
    db_put(s, conn);
}

static void h_members_add(http_req *req, http_resp *resp, void *ctx)
{
    change_members(ctx, req, resp, false);
}

static void h_members_remove(http_req *req, http_resp *resp, void *ctx)
{
    change_members(ctx, req, resp, true);
}

void projects_routes(svc *s)
{
    http_router *r = svc_router(s);
    http_route(r, "GET", "/v1/admin/projects", h_list, s);
    http_route(r, "POST", "/v1/admin/projects", h_create, s);
    http_route(r, "GET", "/v1/admin/projects/{id}", h_get, s);
    http_route(r, "PATCH", "/v1/admin/projects/{id}", h_patch, s);
    http_route(r, "DELETE", "/v1/admin/projects/{id}", h_delete, s);
    http_route(r, "GET", "/v1/admin/projects/{id}/members", h_members_list, s);
    http_route(r, "POST", "/v1/admin/projects/{id}/members", h_members_add, s);
    http_route(r, "DELETE", "/v1/admin/projects/{id}/members", h_members_remove, s);
}
