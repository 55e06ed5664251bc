/* users.c: /v1/admin/users (see users.h). */
#include "users.h"

#include "caller.h"
#include "db_util.h"
#include "events.h"
#include "keypairs.h"
#include "libcommon/log.h"
#include "login.h"

#include <stdlib.h>
#include <string.h>

/* What GET answers, for a user aliased u. */
#define USER_COLUMNS                                                                               \
    "u.id::text AS id, u.email, u.username, u.full_name, u.description, u.role, u.status,"         \
    " u.domain_name, u.resource_policy,"                                                           \
    " COALESCE((SELECT array_agg(pm.project_id::text ORDER BY pm.added_at, pm.project_id)"         \
    "   FROM auth.project_members pm WHERE pm.user_id = u.id), '{}'::text[]) AS projects,"         \
    " u.created_at, u.modified_at"

#define FULL_NAME_MAX 64
#define DESCRIPTION_MAX 1000

/* The user's row as answered, or NULL with 404 sent (also when the caller may
 * not see it: existence does not leak across scopes). */
static json_t *load_visible(PGconn *conn, http_resp *resp, const auth_caller *c, const char *id)
{
    if (!id || !ts_uuid_valid(id)) {
        http_problem(resp, 404, "not-found", NULL, "no such user");
        return NULL;
    }
    const char *p[] = {id};
    PGresult *r = db_query(conn, resp, "read user",
                           "SELECT " USER_COLUMNS " FROM auth.users u WHERE u.id = $1::uuid", 1, p);
    if (!r) return NULL;
    json_t *u = NULL;
    if (PQntuples(r) == 1) {
        u = db_row_json(r, 0);
        if (!caller_can_see_user(c, id, json_string_value(json_object_get(u, "domain_name")),
                                 json_string_value(json_object_get(u, "role")))) {
            json_decref(u);
            u = NULL;
        }
    }
    PQclear(r);
    if (!u) http_problem(resp, 404, "not-found", NULL, "no such user");
    return u;
}

static json_t *reload(PGconn *conn, http_resp *resp, const char *id)
{
    const char *p[] = {id};
    return pgjson_query_one(conn, resp, "read user",
                            "SELECT " USER_COLUMNS " FROM auth.users u WHERE u.id = $1::uuid", 1, p,
                            "no such user");
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

static void h_list(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    db_page page;
    if (!db_page_parse(req, resp, &page)) return;
    const char *domain = http_query_arg(req, "domain");
    const char *role = http_query_arg(req, "role");
    const char *status = http_query_arg(req, "status");
    const char *q = http_query_arg(req, "q");
    if (domain && !*domain) domain = NULL;
    if (role && !*role) role = NULL;
    if (status && !*status) status = NULL;
    if (q && !*q) q = NULL;
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
    PGconn *conn = db_get(s, resp);
    if (!conn) return;
    auth_caller c;
    if (!caller_resolve(conn, req, resp, &c)) goto out;
    /* Scope: superadmin everything; admin its domain without superadmins;
     * user only itself. */
    const char *scope_domain = caller_is_superadmin(&c) ? NULL : c.domain_name;
    const char *hide_super = caller_is_superadmin(&c) ? "f" : "t";
    const char *only_id = caller_is_admin(&c) ? NULL : c.user_id;
    const char *p[] = {domain,  role,         status,       q, scope_domain, hide_super,
                       only_id, page.limit_s, page.offset_s};

    PGresult *n = db_query(conn, resp, "count users",
                           "SELECT count(*) FROM (SELECT 1" LIST_WHERE ") x", 7, p);
    if (!n) goto out;
    long long total = atoll(PQgetvalue(n, 0, 0));
    PQclear(n);
    PGresult *r = db_query(conn, resp, "list users",
                           "SELECT " USER_COLUMNS LIST_WHERE
                           " ORDER BY u.created_at, u.id LIMIT $8::bigint OFFSET $9::bigint",
                           9, p);
    if (!r) goto out;
    http_reply_json(resp, 200, db_page_json(db_rows_json(r), total, &page));
    PQclear(r);
out:
    db_put(s, conn);
}

/* ---- POST /v1/admin/users --------------------------------------------- */

static bool valid_email(const char *e, http_resp *resp)
{
    const char *at = strchr(e, '@');
    if (!at || at == e || !at[1] || strchr(at + 1, '@') || strchr(e, ' ') || strlen(e) > 254) {
        http_problem(resp, 400, "invalid-api-params", NULL, "\"email\" is not an email address");
        return false;
    }
    return true;
}

/* projects: an array of project ids (UUID strings), as a PostgreSQL array
 * literal into *out (heap); NULL when absent. */
static bool parse_projects(json_t *body, char **out, size_t *count, http_resp *resp)
{
    *out = NULL;
    *count = 0;
    json_t *a = json_object_get(body, "projects");
    if (!a || json_is_null(a)) return true;
    if (!json_is_array(a) || json_array_size(a) > 1000) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "\"projects\" must be an array of project ids");
        return false;
    }
    size_t n = json_array_size(a);
    char *lit = ts_malloc(n * 38 + 3);
    size_t len = 0;
    lit[len++] = '{';
    for (size_t i = 0; i < n; i++) {
        const char *id = json_string_value(json_array_get(a, i));
        if (!id || !ts_uuid_valid(id)) {
            free(lit);
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "\"projects\" must be an array of project ids");
            return false;
        }
        if (i) lit[len++] = ',';
        memcpy(lit + len, id, 36);
        len += 36;
    }
    lit[len++] = '}';
    lit[len] = '\0';
    *out = lit;
    *count = n;
    return true;
}

/* Make the user a member of projects (all in domain); 400 when one is not. */
static bool add_memberships(PGconn *conn, http_resp *resp, const char *user_id,
                            const char *projects, const char *domain)
{
    const char *p[] = {projects, domain};
    const char *ip[] = {projects, user_id};
    PGresult *r =
        db_query(conn, resp, "check projects",
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
    r = db_query(conn, resp, "add memberships",
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
    PGresult *r = db_query(conn, resp, "check domain",
                           "SELECT 1 FROM auth.domains WHERE name = $1 AND is_active", 1, p);
    if (!r) return false;
    bool ok = PQntuples(r) == 1;
    PQclear(r);
    if (!ok)
        http_problem(resp, 400, "invalid-api-params", NULL, "no active domain named \"%s\"",
                     domain);
    return ok;
}

static void h_create(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    json_t *body = http_json_body(req, resp);
    if (!body) return;
    static const char *const keys[] = {"email",           "username", "password", "full_name",
                                       "description",     "role",     "status",   "domain_name",
                                       "resource_policy", "projects", NULL};
    const char *email, *username, *password, *full_name, *description, *role, *status, *domain,
        *policy;
    char *projects = NULL;
    size_t n_projects = 0;
    PGconn *conn = NULL;
    json_t *user = NULL;
    if (!db_only_keys(body, keys, resp) ||
        !db_field_str(body, "email", true, 3, 254, &email, resp) || !valid_email(email, resp) ||
        !db_field_str(body, "username", true, 1, 64, &username, resp) ||
        !db_field_str(body, "password", true, LOGIN_PASSWORD_MIN, LOGIN_PASSWORD_MAX, &password,
                      resp) ||
        !db_field_str(body, "full_name", false, 0, FULL_NAME_MAX, &full_name, resp) ||
        !db_field_str(body, "description", false, 0, DESCRIPTION_MAX, &description, resp) ||
        !db_field_enum(body, "role", false, "superadmin|admin|user", &role, resp) ||
        !db_field_enum(body, "status", false, "active|inactive", &status, resp) ||
        !db_field_str(body, "domain_name", false, 1, 64, &domain, resp) ||
        !db_field_str(body, "resource_policy", false, 1, 64, &policy, resp) ||
        !parse_projects(body, &projects, &n_projects, resp))
        goto out;
    if (!role) role = "user";
    if (!status) status = "active";
    if (!policy) policy = "default";

    conn = db_get(s, resp);
    if (!conn) goto out;
    auth_caller c;
    if (!caller_resolve(conn, req, resp, &c)) goto out;
    if (!domain) domain = c.domain_name;
    if (!caller_can_manage_user(&c, domain, role)) {
        http_problem(resp, 403, "forbidden", NULL,
                     caller_is_admin(&c)
                         ? "domain admins create users of their own domain, never superadmins"
                         : "only administrators create users");
        goto out;
    }
    if (!domain_exists(conn, resp, domain)) goto out;
    /* Hashing takes ~0.1 s: before the transaction, not inside it. */
    char hash[LOGIN_HASH_MAX];
    if (!login_password_hash(password, hash)) {
        http_problem(resp, 503, "service-unavailable", NULL, "could not hash the password");
        goto out;
    }
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    if (!db_begin(conn, resp)) goto out;
    const char *p[] = {id,
                       email,
                       username,
                       full_name ? full_name : "",
                       description ? description : "",
                       hash,
                       role,
                       status,
                       domain,
                       policy};
    PGresult *r = db_query(conn, resp, "create user",
                           "INSERT INTO auth.users (id, email, username, full_name, description,"
                           " password_hash, role, status, domain_name, resource_policy)"
                           " VALUES ($1::uuid, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                           10, p);
    if (!r) goto rollback;
    PQclear(r);
    if (projects && n_projects && !add_memberships(conn, resp, id, projects, domain)) goto rollback;
    /* As Backend.AI does: a new user gets its main keypair, so that it can
     * log in (POST /v1/authorize) right away. Admins' keypairs are admin ones. */
    char ak[21];
    if (!keypairs_issue_main(conn, resp, id, strcmp(role, "user") != 0, ak)) goto rollback;
    if (!db_commit(conn, resp)) goto out;
    user = reload(conn, resp, id);
    if (!user) goto out;
    events_user_changed(s, req->request_id, AUTH_CHANGE_CREATED, user);
    TLOG_INFO("user created", "user=%s domain=%s role=%s by=%s", id, domain, role, c.user_id);
    http_reply_json(resp, 201, json_incref(user));
    goto out;
rollback:
    pg_rollback(conn);
out:
    json_decref(user);
    free(projects);
    if (conn) db_put(s, conn);
    json_decref(body);
}

/* ---- GET /v1/admin/users/{id} ----------------------------------------- */

static void h_get(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    PGconn *conn = db_get(s, resp);
    if (!conn) return;
    auth_caller c;
    if (caller_resolve(conn, req, resp, &c)) {
        json_t *u = load_visible(conn, resp, &c, http_param(req, "id"));
        if (u) http_reply_json(resp, 200, u);
    }
    db_put(s, conn);
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

static void h_patch(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    json_t *body = http_json_body(req, resp);
    if (!body) return;
    static const char *const keys[] = {"email",           "username", "password", "full_name",
                                       "description",     "role",     "status",   "domain_name",
                                       "resource_policy", NULL};
    const char *email, *username, *password, *full_name, *description, *role, *status, *domain,
        *policy;
    PGconn *conn = NULL;
    json_t *target = NULL, *user = NULL;
    if (!db_only_keys(body, keys, resp) ||
        !db_field_str(body, "email", false, 3, 254, &email, resp) ||
        (email && !valid_email(email, resp)) ||
        !db_field_str(body, "username", false, 1, 64, &username, resp) ||
        !db_field_str(body, "password", false, LOGIN_PASSWORD_MIN, LOGIN_PASSWORD_MAX, &password,
                      resp) ||
        !db_field_str(body, "full_name", false, 0, FULL_NAME_MAX, &full_name, resp) ||
        !db_field_str(body, "description", false, 0, DESCRIPTION_MAX, &description, resp) ||
        !db_field_enum(body, "role", false, "superadmin|admin|user", &role, resp) ||
        !db_field_enum(body, "status", false, "active|inactive", &status, resp) ||
        !db_field_str(body, "domain_name", false, 1, 64, &domain, resp) ||
        !db_field_str(body, "resource_policy", false, 1, 64, &policy, resp))
        goto out;

    conn = db_get(s, resp);
    if (!conn) goto out;
    auth_caller c;
    if (!caller_resolve(conn, req, resp, &c)) goto out;
    const char *id = http_param(req, "id");
    target = load_visible(conn, resp, &c, id);
    if (!target) goto out;
    const char *t_domain = json_string_value(json_object_get(target, "domain_name"));
    const char *t_role = json_string_value(json_object_get(target, "role"));
    bool self = strcmp(c.user_id, id) == 0;
    if (!caller_can_manage_user(&c, t_domain, t_role) && !only_profile_fields(body)) {
        http_problem(resp, 403, "forbidden", NULL,
                     "users may change only their own full_name and description");
        goto out;
    }
    if (caller_is_admin(&c) &&
        !caller_can_manage_user(&c, domain ? domain : t_domain, role ? role : t_role)) {
        http_problem(resp, 403, "forbidden", NULL,
                     "domain admins keep users in their domain and never make superadmins");
        goto out;
    }
    if (self &&
        ((role && strcmp(role, t_role) != 0) || (status && strcmp(status, "active") != 0))) {
        http_problem(resp, 403, "forbidden", NULL, "you cannot change your own role or status");
        goto out;
    }
    if (domain && strcmp(domain, t_domain) != 0 && !domain_exists(conn, resp, domain)) goto out;
    char hash[LOGIN_HASH_MAX];
    if (password && !login_password_hash(password, hash)) {
        http_problem(resp, 503, "service-unavailable", NULL, "could not hash the password");
        goto out;
    }
    const char *p[] = {id,   email,  username, full_name, description,
                       role, status, domain,   policy,    password ? hash : NULL};
    PGresult *r = db_query(
        conn, resp, "update user",
        "UPDATE auth.users SET email = COALESCE($2, email), username = COALESCE($3, username),"
        " full_name = COALESCE($4, full_name), description = COALESCE($5, description),"
        " role = COALESCE($6, role), status = COALESCE($7, status),"
        " domain_name = COALESCE($8, domain_name), resource_policy = COALESCE($9, resource_policy),"
        " password_hash = COALESCE($10, password_hash),"
        " password_changed_at = CASE WHEN $10::text IS NULL THEN password_changed_at ELSE now() "
        "END,"
        " modified_at = now() WHERE id = $1::uuid",
        10, p);
    if (!r) goto out;
    PQclear(r);
    user = reload(conn, resp, id);
    if (!user) goto out;
    if (json_object_size(body) > 0)
        events_user_changed(s, req->request_id, AUTH_CHANGE_UPDATED, user);
    http_reply_json(resp, 200, json_incref(user));
out:
    json_decref(target);
    json_decref(user);
    if (conn) db_put(s, conn);
    json_decref(body);
}

/* ---- DELETE /v1/admin/users/{id} -------------------------------------- */

static void h_delete(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    PGconn *conn = db_get(s, resp);
    if (!conn) return;
    json_t *target = NULL, *user = NULL;
    PGresult *keys = NULL;
    auth_caller c;
    if (!caller_resolve(conn, req, resp, &c)) goto out;
    const char *id = http_param(req, "id");
    target = load_visible(conn, resp, &c, id);
    if (!target) goto out;
    if (!caller_can_manage_user(&c, json_string_value(json_object_get(target, "domain_name")),
                                json_string_value(json_object_get(target, "role")))) {
        http_problem(resp, 403, "forbidden", NULL, "only administrators delete users");
        goto out;
    }
    if (strcmp(c.user_id, id) == 0) {
        http_problem(resp, 403, "forbidden", NULL, "you cannot delete yourself");
        goto out;
    }
    if (!db_begin(conn, resp)) goto out;
    const char *p[] = {id};
    PGresult *r = db_query(conn, resp, "delete user",
                           "UPDATE auth.users SET status = 'deleted', modified_at = now()"
                           " WHERE id = $1::uuid",
                           1, p);
    if (!r) goto rollback;
    PQclear(r);
    keys = db_query(conn, resp, "revoke keypairs",
                    "UPDATE auth.keypairs SET is_active = false, revoked_at = now()"
                    " WHERE user_id = $1::uuid AND is_active RETURNING access_key",
                    1, p);
    if (!keys) goto rollback;
    if (!db_commit(conn, resp)) goto out;
    user = reload(conn, resp, id);
    if (!user) goto out;
    events_user_changed(s, req->request_id, AUTH_CHANGE_DELETED, user);
    for (int i = 0; i < PQntuples(keys); i++)
        events_keypair_revoked(s, req->request_id, PQgetvalue(keys, i, 0), id, "user-deleted",
                               c.user_id);
    TLOG_INFO("user deleted", "user=%s keypairs_revoked=%d by=%s", id, PQntuples(keys), c.user_id);
    http_reply_json(resp, 200, json_incref(user));
    goto out;
rollback:
    pg_rollback(conn);
out:
    if (keys) PQclear(keys);
    json_decref(target);
    json_decref(user);
    db_put(s, conn);
}

void users_routes(svc *s)
{
    http_router *r = svc_router(s);
    http_route(r, "GET", "/v1/admin/users", h_list, s);
    http_route(r, "POST", "/v1/admin/users", h_create, s);
    http_route(r, "GET", "/v1/admin/users/{id}", h_get, s);
    http_route(r, "PATCH", "/v1/admin/users/{id}", h_patch, s);
    http_route(r, "DELETE", "/v1/admin/users/{id}", h_delete, s);
}
