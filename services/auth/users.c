/* users.c: /v1/admin/users (see users.h). */
#include "users.h"

#include "admin.h"
#include "keypairs.h"
#include "libcommon/log.h"
#include "password.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What GET answers, for a user aliased u. */
#define USER_COLUMNS                                                                               \
    "u.id::text AS id, u.email, u.username, u.full_name, u.description, u.role, u.status,"         \
    " u.domain_name, u.resource_policy,"                                                           \
    " COALESCE((SELECT array_agg(pm.project_id::text ORDER BY pm.added_at, pm.project_id)"         \
    "   FROM auth.project_members pm WHERE pm.user_id = u.id), '{}'::text[]) AS projects,"         \
    " COALESCE((SELECT array_agg(pr.name ORDER BY pm.added_at, pm.project_id)"                     \
    "   FROM auth.project_members pm JOIN auth.projects pr ON pr.id = pm.project_id"               \
    "   WHERE pm.user_id = u.id), '{}'::text[]) AS project_names,"                                 \
    " u.created_at, u.modified_at"
#define USER_BY_ID "SELECT " USER_COLUMNS " FROM auth.users u WHERE u.id = $1::uuid"

#define FULL_NAME_MAX 64
#define DESCRIPTION_MAX 1000

/* The user's row as answered, or NULL with 404 sent (also when the caller may
 * not see it: existence does not leak across scopes). The id goes into the
 * log context. */
static json_t *load_visible(admin_req *a, const char *id)
{
    json_t *u = NULL;
    if (id && ts_uuid_valid(id)) {
        const char *p[] = {id};
        PGresult *r = pgjson_query(a->fr.conn, a->fr.resp, "read user", USER_BY_ID, 1, p);
        if (!r) return NULL;
        if (PQntuples(r) == 1) u = pgjson_row_json(r, 0);
        PQclear(r);
    }
    if (u && !caller_can_see_user(&a->c, id, json_string_value(json_object_get(u, "domain_name")),
                                  json_string_value(json_object_get(u, "role")))) {
        json_decref(u);
        u = NULL;
    }
    if (!u) http_problem(a->fr.resp, 404, "not-found", NULL, "no such user");
    if (u) tlog_ctx_entity("target_user", id);
    return u;
}

/* The user's row after a change (a 404 or 500 answered when it cannot be
 * read), published as UserChanged when publish. */
static json_t *reload(admin_req *a, const char *id, auth_change change, bool publish)
{
    const char *p[] = {id};
    json_t *user =
        pgjson_query_one(a->fr.conn, a->fr.resp, "read user", USER_BY_ID, 1, p, "no such user");
    if (user && publish) events_user_changed(a->fr.s, a->fr.req->request_id, change, user);
    return user;
}

/* ---- GET /v1/admin/users ---------------------------------------------- */

/* The list's filters ($1..$4) and the caller's scope ($5..$7). */
#define LIST_WHERE                                                                                 \
    " FROM auth.users u WHERE ($1::text IS NULL OR u.domain_name = $1)"                            \
    " AND ($2::text IS NULL OR u.role = $2) AND ($3::text IS NULL OR u.status = $3)"               \
    " AND ($4::text IS NULL OR starts_with(lower(u.email), lower($4))"                             \
    "      OR starts_with(lower(u.username), lower($4)))"                                          \
    " AND ($5::text IS NULL OR u.domain_name = $5)"                                                \
    " AND (NOT $6::bool OR u.role <> 'superadmin')"                                                \
    " AND ($7::uuid IS NULL OR u.id = $7::uuid)"

static const char count_sql[] = "SELECT count(*) FROM (SELECT 1" LIST_WHERE ") x";
static const char page_sql[] = "SELECT " USER_COLUMNS LIST_WHERE
                               " ORDER BY u.created_at, u.id LIMIT $8::bigint OFFSET $9::bigint";

static void h_list(http_req *req, http_resp *resp, void *ctx)
{
    pgjson_page page;
    if (!pgjson_page_parse(req, resp, &page)) return;
    const char *domain = admin_query_arg(req, "domain");
    const char *role = admin_query_arg(req, "role");
    const char *status = admin_query_arg(req, "status");
    const char *q = admin_query_arg(req, "q");
    if (role && strcmp(role, "superadmin") && strcmp(role, "admin") && strcmp(role, "user")) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "role must be superadmin, admin or user");
        return;
    }
    if (status && strcmp(status, "active") && strcmp(status, "inactive") &&
        strcmp(status, "deleted")) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "status must be active, inactive or deleted");
        return;
    }
    if ((domain && strlen(domain) > 256) || (q && strlen(q) > 256)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "filter too long");
        return;
    }
    admin_req a;
    if (!admin_begin(&a, ctx, req, resp, REQ_ANY, NULL)) return;
    /* Scope: superadmin everything; admin its domain without superadmins;
     * user only itself. */
    bool super = caller_is_superadmin(&a.c);
    const char *filters[] = {domain,
                             role,
                             status,
                             q,
                             super ? NULL : a.c.domain_name,
                             super ? "f" : "t",
                             caller_is_admin(&a.c) ? NULL : a.c.user_id};
    admin_reply_page(&a, "list users", count_sql, page_sql, 7, filters, &page);
    admin_end(&a);
}

/* ---- the fields of POST and PATCH ------------------------------------- */

typedef struct user_fields {
    const char *email, *username, *password, *full_name, *description, *role, *status, *domain,
        *policy;
} user_fields;

/* The body of a create (email, username and password required; projects
 * allowed) or a patch; false after a 400. */
static bool parse_fields(json_t *body, bool create, user_fields *f, http_resp *resp)
{
    static const char *const keys[] = {"projects",    "email",           "username", "password",
                                       "full_name",   "description",     "role",     "status",
                                       "domain_name", "resource_policy", NULL};
    if (!pgjson_only_keys(body, create ? keys : keys + 1, resp) ||
        !pgjson_field_str(body, "email", create, 3, 254, &f->email, resp))
        return false;
    const char *at = f->email ? strchr(f->email, '@') : NULL, *e = f->email;
    if (e &&
        (!at || at == e || !at[1] || strchr(at + 1, '@') || strchr(e, ' ') || strlen(e) > 254)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "\"email\" is not an email address");
        return false;
    }
    return pgjson_field_str(body, "username", create, 1, 64, &f->username, resp) &&
           pgjson_field_str(body, "password", create, PASSWORD_MIN, PASSWORD_MAX, &f->password,
                            resp) &&
           pgjson_field_str(body, "full_name", false, 0, FULL_NAME_MAX, &f->full_name, resp) &&
           pgjson_field_str(body, "description", false, 0, DESCRIPTION_MAX, &f->description,
                            resp) &&
           pgjson_field_enum(body, "role", false, "superadmin|admin|user", &f->role, resp) &&
           pgjson_field_enum(body, "status", false, "active|inactive", &f->status, resp) &&
           pgjson_field_str(body, "domain_name", false, 1, 64, &f->domain, resp) &&
           pgjson_field_str(body, "resource_policy", false, 1, 64, &f->policy, resp);
}

/* The password's hash into hash (when one is given); false after a 503. */
static bool hash_password(const char *password, char hash[PASSWORD_HASH_MAX], http_resp *resp)
{
    if (!password || password_hash(password, hash)) return true;
    http_problem(resp, 503, "service-unavailable", NULL, "could not hash the password");
    return false;
}

/* ---- POST /v1/admin/users --------------------------------------------- */

/* projects: an array of project ids (UUID strings), as a PostgreSQL array
 * literal into *out (heap); NULL when absent or empty. */
static bool parse_projects(json_t *body, char **out, http_resp *resp)
{
    *out = NULL;
    json_t *a = json_object_get(body, "projects");
    if (!a || json_is_null(a)) return true;
    size_t n = json_array_size(a);
    bool ok = json_is_array(a) && n <= 1000;
    for (size_t i = 0; ok && i < n; i++) {
        const char *id = json_string_value(json_array_get(a, i));
        ok = id && ts_uuid_valid(id);
    }
    if (!ok) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "\"projects\" must be an array of project ids");
        return false;
    }
    if (n == 0) return true;
    char *lit = ts_malloc(n * 37 + 2), *o = lit;
    for (size_t i = 0; i < n; i++)
        o += sprintf(o, "%c%s", i ? ',' : '{', json_string_value(json_array_get(a, i)));
    strcpy(o, "}");
    *out = lit;
    return true;
}

/* Make the user a member of projects (all in domain); 400 when one is not. */
static bool add_memberships(PGconn *conn, http_resp *resp, const char *user_id,
                            const char *projects, const char *domain)
{
    const char *p[] = {projects, domain};
    const char *ip[] = {projects, user_id};
    PGresult *r =
        pgjson_query(conn, resp, "check projects",
                     "SELECT count(DISTINCT x) = (SELECT count(*) FROM auth.projects"
                     "   WHERE id IN (SELECT DISTINCT unnest($1::uuid[])) AND domain_name = $2)"
                     " FROM unnest($1::uuid[]) x",
                     2, p);
    if (!r) return false;
    bool ok = PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    if (!ok) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "\"projects\" names a project that does not exist in domain %s", domain);
        return false;
    }
    r = pgjson_query(conn, resp, "add memberships",
                     "INSERT INTO auth.project_members (project_id, user_id)"
                     " SELECT DISTINCT unnest($1::uuid[]), $2::uuid ON CONFLICT DO NOTHING",
                     2, ip);
    if (!r) return false;
    PQclear(r);
    return true;
}

static bool domain_exists(PGconn *conn, http_resp *resp, const char *domain)
{
    const char *p[] = {domain};
    PGresult *r = pgjson_query(conn, resp, "check domain",
                               "SELECT 1 FROM auth.domains WHERE name = $1 AND is_active", 1, p);
    if (!r) return false;
    bool ok = PQntuples(r) == 1;
    PQclear(r);
    if (!ok)
        http_problem(resp, 400, "invalid-api-params", NULL, "no active domain named \"%s\"",
                     domain);
    return ok;
}

/* Inside a transaction: the user's row, its memberships and (as Backend.AI
 * does) its main keypair, so that it can log in (POST /v1/authorize) right
 * away; admins' keypairs are admin ones. */
static bool insert_user(admin_req *a, const char *id, const user_fields *f, const char *hash,
                        const char *projects)
{
    const char *p[] = {id,
                       f->email,
                       f->username,
                       f->full_name ? f->full_name : "",
                       f->description ? f->description : "",
                       hash,
                       f->role,
                       f->status,
                       f->domain,
                       f->policy};
    PGresult *r =
        pgjson_query(a->fr.conn, a->fr.resp, "create user",
                     "INSERT INTO auth.users (id, email, username, full_name, description,"
                     " password_hash, role, status, domain_name, resource_policy)"
                     " VALUES ($1::uuid, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                     10, p);
    if (!r) return false;
    PQclear(r);
    char ak[21];
    return (!projects || add_memberships(a->fr.conn, a->fr.resp, id, projects, f->domain)) &&
           keypairs_issue_main(a->fr.conn, a->fr.resp, id, strcmp(f->role, "user") != 0, ak);
}

static void h_create(http_req *req, http_resp *resp, void *ctx)
{
    json_t *body = http_json_body(req, resp);
    user_fields f = {0};
    char *projects = NULL;
    admin_req a;
    if (!body || !parse_fields(body, true, &f, resp) || !parse_projects(body, &projects, resp) ||
        !admin_begin(&a, ctx, req, resp, REQ_ANY, NULL)) {
        free(projects);
        json_decref(body);
        return;
    }
    if (!f.role) f.role = "user";
    if (!f.status) f.status = "active";
    if (!f.policy) f.policy = "default";
    if (!f.domain) f.domain = a.c.domain_name;
    char id[TS_UUID_STRLEN], hash[PASSWORD_HASH_MAX];
    ts_uuid4(id);
    if (!caller_can_manage_user(&a.c, f.domain, f.role)) {
        http_problem(resp, 403, "forbidden", NULL,
                     caller_is_admin(&a.c)
                         ? "domain admins create users of their own domain, never superadmins"
                         : "only administrators create users");
    } else if (domain_exists(a.fr.conn, resp, f.domain) &&
               /* Hashing takes ~0.1 s: before the transaction, not inside it. */
               hash_password(f.password, hash, resp) && pgjson_begin(a.fr.conn, resp)) {
        if (!insert_user(&a, id, &f, hash, projects)) {
            pg_rollback(a.fr.conn);
        } else if (pgjson_commit(a.fr.conn, resp)) {
            tlog_ctx_entity("target_user", id);
            json_t *user = reload(&a, id, AUTH_CHANGE_CREATED, true);
            TLOG_INFO("user created", "domain=%s role=%s", f.domain, f.role);
            if (user) http_reply_json(resp, 201, user);
        }
    }
    free(projects);
    json_decref(body);
    admin_end(&a);
}

/* ---- GET /v1/admin/users/{id} ----------------------------------------- */

static void h_get(http_req *req, http_resp *resp, void *ctx)
{
    admin_req a;
    if (!admin_begin(&a, ctx, req, resp, REQ_ANY, NULL)) return;
    json_t *u = load_visible(&a, http_param(req, "id"));
    if (u) http_reply_json(resp, 200, u);
    admin_end(&a);
}

/* ---- PATCH /v1/admin/users/{id} --------------------------------------- */

static bool only_profile_fields(json_t *body)
{
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v)
    {
        if (strcmp(key, "full_name") != 0 && strcmp(key, "description") != 0) return false;
    }
    return true;
}

/* Whether the caller may make this change to the target (403 when not). */
static bool patch_allowed(admin_req *a, const char *id, json_t *target, json_t *body,
                          const user_fields *f)
{
    const char *t_domain = json_string_value(json_object_get(target, "domain_name"));
    const char *t_role = json_string_value(json_object_get(target, "role"));
    const char *why = NULL;
    if (!caller_can_manage_user(&a->c, t_domain, t_role) && !only_profile_fields(body))
        why = "users may change only their own full_name and description";
    else if (caller_is_admin(&a->c) &&
             !caller_can_manage_user(&a->c, f->domain ? f->domain : t_domain,
                                     f->role ? f->role : t_role))
        why = "domain admins keep users in their domain and never make superadmins";
    else if (strcmp(a->c.user_id, id) == 0 && ((f->role && strcmp(f->role, t_role) != 0) ||
                                               (f->status && strcmp(f->status, "active") != 0)))
        why = "you cannot change your own role or status";
    if (why) http_problem(a->fr.resp, 403, "forbidden", NULL, "%s", why);
    return !why && (!f->domain || strcmp(f->domain, t_domain) == 0 ||
                    domain_exists(a->fr.conn, a->fr.resp, f->domain));
}

static const char update_sql[] =
    "UPDATE auth.users SET email = COALESCE($2, email), username = COALESCE($3, username),"
    " full_name = COALESCE($4, full_name), description = COALESCE($5, description),"
    " role = COALESCE($6, role), status = COALESCE($7, status),"
    " domain_name = COALESCE($8, domain_name), resource_policy = COALESCE($9, resource_policy),"
    " password_hash = COALESCE($10, password_hash),"
    " password_changed_at = CASE WHEN $10::text IS NULL THEN password_changed_at ELSE now() END,"
    " modified_at = now() WHERE id = $1::uuid";

static void h_patch(http_req *req, http_resp *resp, void *ctx)
{
    json_t *body = http_json_body(req, resp), *target = NULL;
    user_fields f = {0};
    admin_req a;
    if (!body || !parse_fields(body, false, &f, resp) ||
        !admin_begin(&a, ctx, req, resp, REQ_ANY, NULL)) {
        json_decref(body);
        return;
    }
    const char *id = http_param(req, "id");
    char hash[PASSWORD_HASH_MAX];
    target = load_visible(&a, id);
    if (target && patch_allowed(&a, id, target, body, &f) &&
        hash_password(f.password, hash, resp)) {
        const char *p[] = {id,     f.email,  f.username, f.full_name, f.description,
                           f.role, f.status, f.domain,   f.policy,    f.password ? hash : NULL};
        PGresult *r = pgjson_query(a.fr.conn, resp, "update user", update_sql, 10, p);
        json_t *user = r ? reload(&a, id, AUTH_CHANGE_UPDATED, json_object_size(body) > 0) : NULL;
        if (user) http_reply_json(resp, 200, user);
        PQclear(r);
    }
    json_decref(target);
    json_decref(body);
    admin_end(&a);
}

/* ---- DELETE /v1/admin/users/{id} -------------------------------------- */

/* Inside a transaction: mark the user deleted and revoke its keypairs (their
 * access keys in *keys). */
bool users_retire(admin_req *a, const char *id, const char *status, PGresult **keys)
{
    const char *p[] = {id, status};
    PGresult *r = pgjson_query(a->fr.conn, a->fr.resp, "retire user",
                               "UPDATE auth.users SET status = $2, modified_at = now()"
                               " WHERE id = $1::uuid",
                               2, p);
    if (!r) return false;
    PQclear(r);
    *keys = pgjson_query(a->fr.conn, a->fr.resp, "revoke keypairs",
                         "UPDATE auth.keypairs SET is_active = false, revoked_at = now()"
                         " WHERE user_id = $1::uuid AND is_active RETURNING access_key",
                         1, p);
    return *keys != NULL;
}

static void h_delete(http_req *req, http_resp *resp, void *ctx)
{
    admin_req a;
    if (!admin_begin(&a, ctx, req, resp, REQ_ANY, NULL)) return;
    const char *id = http_param(req, "id");
    json_t *target = load_visible(&a, id);
    PGresult *keys = NULL;
    if (!target) {
        /* 404 answered */
    } else if (!caller_can_manage_user(&a.c,
                                       json_string_value(json_object_get(target, "domain_name")),
                                       json_string_value(json_object_get(target, "role")))) {
        http_problem(resp, 403, "forbidden", NULL, "only administrators delete users");
    } else if (strcmp(a.c.user_id, id) == 0) {
        http_problem(resp, 403, "forbidden", NULL, "you cannot delete yourself");
    } else if (pgjson_begin(a.fr.conn, resp)) {
        if (!users_retire(&a, id, "deleted", &keys)) {
            pg_rollback(a.fr.conn);
        } else if (pgjson_commit(a.fr.conn, resp)) {
            json_t *user = reload(&a, id, AUTH_CHANGE_DELETED, true);
            for (int i = 0; user && i < PQntuples(keys); i++)
                events_keypair_revoked(a.fr.s, req->request_id, PQgetvalue(keys, i, 0), id,
                                       "user-deleted", a.c.user_id);
            TLOG_INFO("user deleted", "keypairs_revoked=%d", PQntuples(keys));
            if (user) http_reply_json(resp, 200, user);
        }
    }
    PQclear(keys);
    json_decref(target);
    admin_end(&a);
}

void users_routes(svc *s)
{
    static const admin_crud routes = {
        "/v1/admin/users", "/v1/admin/users/{id}", h_list, h_create, h_get, h_patch, h_delete};
    admin_crud_routes(s, &routes, NULL);
}
