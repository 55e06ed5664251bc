/* projects.c: /v1/admin/projects and their members (see projects.h). */
#include "projects.h"

#include "admin.h"
#include "events.h"
#include "libcommon/log.h"
#include "limits.h"

#include <stdlib.h>
#include <string.h>

#define PROJECT_COLS                                                                               \
    "id, name, domain_name, description, is_active, total_resource_slots,"                         \
    " allowed_vfolder_hosts, resource_policy, idle_timeout, created_at, modified_at"
#define MEMBERS_MAX 1000

/* $1 domain or NULL, $2 is_active or NULL, $3 a member (users see only
 * the projects they belong to) or NULL. */
#define PROJECT_FILTER                                                                             \
    " FROM auth.projects p WHERE ($1::text IS NULL OR domain_name = $1)"                           \
    " AND ($2::bool IS NULL OR is_active = $2::bool)"                                              \
    " AND ($3::uuid IS NULL OR EXISTS (SELECT 1 FROM auth.project_members m"                       \
    "   WHERE m.project_id = p.id AND m.user_id = $3::uuid))"

static const char count_sql[] = "SELECT count(*)" PROJECT_FILTER;
static const char page_sql[] = "SELECT " PROJECT_COLS PROJECT_FILTER
                               " ORDER BY domain_name, name, id LIMIT $4::bigint OFFSET $5::bigint";
/* The project's domain, locked against concurrent changes of the project. */
static const char lock_sql[] =
    "SELECT domain_name FROM auth.projects WHERE id = $1::uuid FOR UPDATE";
static const char insert_sql[] =
    "INSERT INTO auth.projects (id, name, domain_name, description, is_active,"
    " total_resource_slots, allowed_vfolder_hosts, resource_policy, idle_timeout)"
    " VALUES ($1::uuid, $2, $3, COALESCE($4, ''), COALESCE($5::bool, true),"
    " COALESCE($6::jsonb, '{}'::jsonb), COALESCE($7::jsonb, '{}'::jsonb),"
    " COALESCE($8, 'default'), COALESCE($9::int, 0))"
    " RETURNING " PROJECT_COLS;
/* The same parameters as insert_sql, $3 (the domain) unused: NULL leaves a
 * column as it is. */
static const char update_sql[] =
    "UPDATE auth.projects SET name = COALESCE($2, name), description = COALESCE($4, description),"
    " is_active = COALESCE($5::bool, is_active),"
    " total_resource_slots = COALESCE($6::jsonb, total_resource_slots),"
    " allowed_vfolder_hosts = COALESCE($7::jsonb, allowed_vfolder_hosts),"
    " resource_policy = COALESCE($8, resource_policy),"
    " idle_timeout = COALESCE($9::int, idle_timeout), modified_at = now()"
    " WHERE id = $1::uuid AND $3::text IS NULL RETURNING " PROJECT_COLS;

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

#define REFUSAL "only admins may manage projects"
#define MISSING "no such project"

/* The {id} parameter when the project exists and the caller may see its
 * domain (its domain into domain, when given); else a 404 (or 500). With
 * lock, the project row is locked (inside a transaction). */
static const char *find_project(admin_req *a, bool lock, char *domain, size_t size)
{
    const char *id = http_param(a->fr.req, "id");
    if (!id || !ts_uuid_valid(id)) {
        http_problem(a->fr.resp, 404, "not-found", NULL, MISSING);
        return NULL;
    }
    const char *params[] = {id};
    PGresult *r = pgjson_query(
        a->fr.conn, a->fr.resp, "find project",
        lock ? lock_sql : "SELECT domain_name FROM auth.projects WHERE id = $1::uuid", 1, params);
    if (!r) return NULL;
    bool ok = PQntuples(r) == 1 && caller_can_see_domain(&a->c, PQgetvalue(r, 0, 0));
    if (ok && domain) ts_strlcpy(domain, PQgetvalue(r, 0, 0), size);
    PQclear(r);
    if (!ok) http_problem(a->fr.resp, 404, "not-found", NULL, MISSING);
    if (ok) tlog_ctx_entity("project", id);
    return ok ? id : NULL;
}

static const char *visible_project(admin_req *a, const admin_resource *r)
{
    (void)r;
    return find_project(a, false, NULL, 0);
}

/* ProjectChanged for a changed row (committed). */
static void publish(admin_req *a, auth_change change, json_t *row)
{
    events_project_changed(a->fr.s, a->fr.req->request_id, change, row);
}

/* DELETE deactivates; members and folders stay. */
static admin_resource projects = {
    .noun = "project",
    .refusal = REFUSAL,
    .get_sql = "SELECT " PROJECT_COLS " FROM auth.projects WHERE id = $1::uuid",
    .delete_sql = "UPDATE auth.projects SET is_active = false, modified_at = now()"
                  " WHERE id = $1::uuid RETURNING " PROJECT_COLS,
    .visible = visible_project,
    .publish = publish,
};

/* ---- projects --------------------------------------------------------------- */

static void h_list(http_req *req, http_resp *resp, void *ctx)
{
    pgjson_page pg;
    const char *active, *domain = admin_query_arg(req, "domain");
    if (!pgjson_page_parse(req, resp, &pg) || !admin_query_bool(req, resp, "is_active", &active))
        return;
    if (domain && !limits_name_ok(domain)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "domain must be a domain name");
        return;
    }
    admin_req a;
    if (!admin_begin(&a, ((admin_resource *)ctx)->s, req, resp, REQ_ANY, NULL)) return;
    if (domain && !caller_can_see_domain(&a.c, domain)) {
        http_problem(resp, 403, "forbidden", NULL, "you may list only your own domain's projects");
    } else {
        /* users: the projects they are members of (Backend.AI's groups query) */
        const char *filters[] = {caller_is_superadmin(&a.c) ? domain : a.c.domain_name, active,
                                 caller_is_admin(&a.c) ? NULL : a.c.user_id};
        admin_reply_page(&a, "list projects", count_sql, page_sql, 3, filters, &pg);
    }
    admin_end(&a);
}

/* The fields of a create (name required) or a patch; false after a 400. */
typedef struct project_fields {
    const char *name, *policy;
    limits_fields limits;
} project_fields;

static bool parse_fields(json_t *body, bool create, project_fields *f, http_resp *resp)
{
    return limits_field_name(body, "name", create, &f->name, resp) &&
           limits_fields_parse(body, &f->limits, resp) &&
           limits_field_name(body, "resource_policy", false, &f->policy, resp);
}

/* resource_policy names a project resource policy (NULL: not given). */
static bool _policy_known(PGconn *conn, const char *name, http_resp *resp)
{
    if (!name) return true;
    const char *p[] = {name};
    PGresult *r =
        pgjson_query(conn, resp, "read project resource policy",
                     "SELECT 1 FROM auth.project_resource_policies WHERE name = $1", 1, p);
    if (!r) return false;
    bool ok = PQntuples(r) == 1;
    PQclear(r);
    if (!ok)
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "resource_policy: unknown project resource policy %s", name);
    return ok;
}

/* POST (create) or PATCH .../{id}: answers the row and publishes
 * ProjectChanged. */
static void h_write(http_req *req, http_resp *resp, void *ctx)
{
    admin_resource *r = ctx;
    bool create = strcmp(req->method, "POST") == 0;
    static const char *const keys[] = {"domain_name",
                                       "name",
                                       "description",
                                       "is_active",
                                       "total_resource_slots",
                                       "allowed_vfolder_hosts",
                                       "resource_policy",
                                       "idle_timeout",
                                       NULL};
    admin_req a;
    if (!admin_begin_for(&a, r, req, resp)) return;
    char new_id[TS_UUID_STRLEN];
    const char *id = create ? new_id : find_project(&a, false, NULL, 0), *domain = NULL;
    json_t *body = id ? http_json_body(req, resp) : NULL;
    project_fields f = {0};
    if (body && pgjson_only_keys(body, create ? keys : keys + 1, resp) &&
        (!create || limits_field_name(body, "domain_name", false, &domain, resp)) &&
        parse_fields(body, create, &f, resp) && _policy_known(a.fr.conn, f.policy, resp)) {
        if (create && !domain) domain = a.c.domain_name; /* default: the caller's domain */
        const limits_fields *l = &f.limits;
        const char *v[] = {id,       f.name,   domain,   l->description, l->is_active,
                           l->slots, l->hosts, f.policy, l->idle_timeout};
        if (!create) {
            admin_change_row(&a, "patch project", update_sql, 9, v, 200, AUTH_CHANGE_UPDATED,
                             publish, MISSING);
        } else if (!caller_can_manage_domain(&a.c, domain)) {
            http_problem(resp, 403, "forbidden", NULL,
                         "domain admins may create projects only in their own domain");
        } else {
            ts_uuid4(new_id);
            tlog_ctx_entity("project", new_id);
            admin_change_row(&a, "create project", insert_sql, 9, v, 201, AUTH_CHANGE_CREATED,
                             publish, MISSING);
        }
    }
    limits_fields_free(&f.limits);
    json_decref(body);
    admin_end(&a);
}

/* ---- members ---------------------------------------------------------------- */

static void h_members_list(http_req *req, http_resp *resp, void *ctx)
{
    pgjson_page pg;
    admin_req a;
    if (!pgjson_page_parse(req, resp, &pg) || !admin_begin_for(&a, ctx, req, resp)) return;
    const char *id = find_project(&a, false, NULL, 0);
    const char *filters[] = {id, caller_is_superadmin(&a.c) ? "true" : "false"};
    if (id)
        admin_reply_page(&a, "list members", members_count_sql, members_page_sql, 2, filters, &pg);
    admin_end(&a);
}

/* {"user_ids": [...]} or {"emails": [...]}: the array as JSON text in
 * *list_text (free it); *by_email says which. False after a 400. */
static bool parse_member_body(json_t *body, char **list_text, bool *by_email, http_resp *resp)
{
    static const char *const keys[] = {"user_ids", "emails", NULL};
    if (!pgjson_only_keys(body, keys, resp)) return false;
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

/* The user ids of the entries of list (all or nothing: a 400 naming the
 * first that is not eligible) as a JSON array in *wanted. */
static bool resolve_members(admin_req *a, const char *id, const char *domain, const char *list,
                            bool by_email, bool removing, json_t *wanted)
{
    const char *params[] = {list, domain, caller_is_superadmin(&a->c) ? "true" : "false",
                            removing ? "true" : "false", id};
    PGresult *res = pgjson_query(a->fr.conn, a->fr.resp, "resolve users",
                                 by_email ? resolve_emails_sql : resolve_ids_sql, 5, params);
    bool ok = res != NULL;
    for (int i = 0; ok && i < PQntuples(res); i++) {
        if (PQgetisnull(res, i, 1)) {
            char q[300];
            ts_strlcpy(q, PQgetvalue(res, i, 0), sizeof(q));
            http_problem(a->fr.resp, 400, "invalid-api-params", NULL,
                         "%s \"%s\" is not a user of the project's domain \"%s\"",
                         by_email ? "email" : "user id", q, domain);
            ok = false;
        } else {
            json_array_append_new(wanted, json_string(PQgetvalue(res, i, 1)));
        }
    }
    PQclear(res);
    return ok;
}

/* The answer to a committed change: the user ids in chg (those that changed)
 * and the other wanted ones (already so). */
static void reply_members(admin_req *a, const char *id, PGresult *chg, json_t *wanted,
                          bool removing)
{
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
        events_project_members_changed(a->fr.s, a->fr.req->request_id, id, changed, removing);
    http_reply_json(a->fr.resp, 200,
                    json_pack("{s:s, s:o, s:o}", "project_id", id, removing ? "removed" : "added",
                              changed, "unchanged", same));
}

/* POST (add) or DELETE (remove) .../members, in one transaction: lock the
 * project, resolve every entry (all or nothing), then insert (or delete).
 * The answer lists the user ids that changed and those that were already so. */
static void h_members_change(http_req *req, http_resp *resp, void *ctx)
{
    bool removing = strcmp(req->method, "DELETE") == 0;
    admin_req a;
    if (!admin_begin_for(&a, ctx, req, resp)) return;
    json_t *body = http_json_body(req, resp), *wanted = json_array();
    char *list = NULL, *wanted_s = NULL, domain[AUTH_NAME_MAX];
    bool by_email = false;
    if (body && parse_member_body(body, &list, &by_email, resp) && pgjson_begin(a.fr.conn, resp)) {
        const char *id = find_project(&a, true, domain, sizeof(domain));
        PGresult *chg = NULL;
        if (id && resolve_members(&a, id, domain, list, by_email, removing, wanted)) {
            wanted_s = json_dumps(wanted, JSON_COMPACT);
            const char *params[] = {id, wanted_s};
            chg = pgjson_query(a.fr.conn, resp, removing ? "remove members" : "add members",
                               removing ? remove_sql : add_sql, 2, params);
        }
        if (chg && pgjson_commit(a.fr.conn, resp))
            reply_members(&a, id, chg, wanted, removing);
        else if (!chg)
            pg_rollback(a.fr.conn);
        PQclear(chg);
    }
    free(wanted_s);
    json_decref(wanted);
    free(list);
    json_decref(body);
    admin_end(&a);
}

void projects_routes(svc *s)
{
    static const admin_crud routes = {
        "/v1/admin/projects", "/v1/admin/projects/{id}", h_list, h_write, admin_h_get, h_write,
        admin_h_delete};
    admin_crud_routes(s, &routes, &projects);
    http_router *r = svc_router(s);
    http_route(r, "GET", "/v1/admin/projects/{id}/members", h_members_list, &projects);
    http_route(r, "POST", "/v1/admin/projects/{id}/members", h_members_change, &projects);
    http_route(r, "DELETE", "/v1/admin/projects/{id}/members", h_members_change, &projects);
}
