/* login.c: password login with lockout, role and password change (see
 * login.h). */
#include "login.h"

#include "login_grant.h"
#include "sso_login.h"

#include "admin.h"
#include "caller.h"
#include "libcommon/pgjson.h"
#include "events.h"
#include "libcommon/log.h"
#include "password.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static login_opts opts = {.lockout_failures = 5, .lockout_ms = 300000};

void login_configure(const login_opts *o)
{
    opts = *o;
}

/* ---- POST /v1/authorize ----------------------------------------------- */

/* The user by email (case-insensitively) or user name, the email match
 * first; with the lock state as the database sees it now. */
static const char find_user_sql[] =
    "SELECT id::text, password_hash, status, role, domain_name,"
    " (locked_until IS NOT NULL AND locked_until > now()) AS locked,"
    " ceil(extract(epoch FROM (locked_until - now())))::bigint AS retry_after"
    " FROM auth.users WHERE lower(email) = lower($1) OR username = $1"
    " ORDER BY (lower(email) = lower($1)) DESC LIMIT 1";

/* One failure more; the one that reaches the threshold locks the user and
 * starts counting again from zero. */
static const char failure_sql[] =
    "UPDATE auth.users SET"
    " locked_until = CASE WHEN failed_logins + 1 >= $2::int"
    "   THEN now() + make_interval(secs => $3::bigint / 1000.0) ELSE locked_until END,"
    " failed_logins = CASE WHEN failed_logins + 1 >= $2::int THEN 0 ELSE failed_logins + 1 END"
    " WHERE id = $1::uuid RETURNING locked_until > now()";

static const char success_sql[] =
    "UPDATE auth.users SET failed_logins = 0, locked_until = NULL"
    " WHERE id = $1::uuid AND (failed_logins <> 0 OR locked_until IS NOT NULL)";

static void too_many(http_resp *resp, long long retry_after)
{
    if (retry_after < 1) retry_after = 1;
    char v[24];
    snprintf(v, sizeof(v), "%lld", retry_after);
    http_set_header(resp, "Retry-After", v);
    http_problem(resp, 429, "too-many-requests", NULL,
                 "too many failed logins: this user is locked; retry in %lld s", retry_after);
}

static void record_failure(PGconn *conn, const char *user_id)
{
    char fails[16], ms[24];
    snprintf(fails, sizeof(fails), "%d", opts.lockout_failures);
    snprintf(ms, sizeof(ms), "%lld", (long long)opts.lockout_ms);
    const char *p[] = {user_id, fails, ms};
    PGresult *r = pgjson_query(conn, NULL, "record failed login", failure_sql, 3, p);
    if (!r) {
        TLOG_ERROR("could not record a failed login", "");
        return;
    }
    if (PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't')
        TLOG_WARN("user locked after failed logins", "failures=%d lock_ms=%lld",
                  opts.lockout_failures, (long long)opts.lockout_ms);
    PQclear(r);
}

static void h_authorize(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    json_t *body = http_json_body(req, resp);
    if (!body) return;
    const char *t = json_string_value(json_object_get(body, "type"));
    if (t && strcmp(t, "token") == 0) {
        sso_login_authorize(s, req, resp, body);
        json_decref(body);
        return;
    }
    static const char *const keys[] = {"type",     "domain",      "username",
                                       "password", "client_addr", NULL};
    const char *type, *domain, *username, *password, *client_addr;
    if (!pgjson_only_keys(body, keys, resp) ||
        !pgjson_field_enum(body, "type", false, "keypair", &type, resp) ||
        !pgjson_field_str(body, "domain", false, 1, 64, &domain, resp) ||
        !pgjson_field_str(body, "username", true, 1, 254, &username, resp) ||
        !pgjson_field_str(body, "password", true, 1, PASSWORD_MAX, &password, resp) ||
        !pgjson_field_str(body, "client_addr", false, 0, 128, &client_addr, resp)) {
        json_decref(body);
        return;
    }
    if (!domain) domain = "default";
    char qaddr[160];
    tlog_quote(qaddr, sizeof(qaddr), client_addr ? client_addr : req->client_addr);

    PGconn *conn = pgjson_get(s, resp);
    if (!conn) {
        json_decref(body);
        return;
    }
    const char *p[] = {username};
    PGresult *u = pgjson_query(conn, resp, "find user", find_user_sql, 1, p);
    if (!u) goto out;
    bool found = PQntuples(u) == 1;
    if (found) tlog_ctx_user(PQgetvalue(u, 0, 0));
    if (found && PQgetvalue(u, 0, 5)[0] == 't') {
        too_many(resp, atoll(PQgetvalue(u, 0, 6)));
        TLOG_INFO("login refused: locked", "client=%s", qaddr);
        goto out_u;
    }
    /* Always one verification, also for unknown users: no timing leak. It
     * may wait for a hashing slot: give the connection back meanwhile (a
     * PGresult outlives its connection), so that logins never starve the
     * gateway's credential lookups of connections. */
    pgjson_put(s, conn);
    bool pw_ok = password_verify(found ? PQgetvalue(u, 0, 1) : NULL, password);
    conn = pgjson_get(s, resp);
    if (!conn) goto out_u;
    bool domain_ok = found && strcmp(PQgetvalue(u, 0, 4), domain) == 0;
    if (!pw_ok || !domain_ok) {
        if (found) record_failure(conn, PQgetvalue(u, 0, 0));
        TLOG_INFO("login failed", "client=%s%s", qaddr, found ? "" : " user=(unknown)");
        http_problem(resp, 401, "auth-failed", NULL, "wrong domain, user name or password");
        goto out_u;
    }
    const char *uid = PQgetvalue(u, 0, 0);
    const char *status = PQgetvalue(u, 0, 2);
    if (strcmp(status, "active") != 0) {
        http_problem(resp, 401, "auth-failed", NULL, "this user account is %s", status);
        goto out_u;
    }
    const char *ip[] = {uid};
    PGresult *r = pgjson_query(conn, resp, "reset failed logins", success_sql, 1, ip);
    if (!r) goto out_u;
    PQclear(r);
    login_grant(conn, resp, uid, PQgetvalue(u, 0, 3), status, NULL, "login", qaddr);
out_u:
    PQclear(u);
out:
    if (conn) pgjson_put(s, conn);
    json_decref(body);
}

/* ---- GET /v1/role ------------------------------------------------------ */

static void h_role(http_req *req, http_resp *resp, void *ctx)
{
    const char *group = admin_query_arg(req, "group");
    if (group && !ts_uuid_valid(group)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "group must be a project id (UUID)");
        return;
    }
    admin_req a;
    if (!admin_begin(&a, ctx, req, resp, REQ_ANY, NULL)) return;
    json_t *group_role = json_null();
    PGresult *r = NULL;
    if (group) {
        const char *p[] = {group, a.c.user_id};
        r = pgjson_query(a.fr.conn, resp, "membership",
                         "SELECT 1 FROM auth.project_members"
                         " WHERE project_id = $1::uuid AND user_id = $2::uuid",
                         2, p);
        if (r && PQntuples(r) == 1) group_role = json_string("user");
    }
    if (!group || r)
        http_reply_json(resp, 200,
                        json_pack("{s:s, s:s, s:o}", "global_role",
                                  caller_is_superadmin(&a.c) ? "superadmin" : "user", "domain_role",
                                  caller_is_admin(&a.c) ? "admin" : "user", "group_role",
                                  group_role));
    else
        json_decref(group_role);
    PQclear(r);
    admin_end(&a);
}

/* ---- POST /v1/update-password ----------------------------------------- */

static void h_update_password(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    json_t *body = http_json_body(req, resp);
    if (!body) return;
    static const char *const keys[] = {"old_password", "new_password", "new_password2", NULL};
    const char *old_pw, *new_pw, *new_pw2;
    if (!pgjson_only_keys(body, keys, resp) ||
        !pgjson_field_str(body, "old_password", true, 1, PASSWORD_MAX, &old_pw, resp) ||
        !pgjson_field_str(body, "new_password", true, 1, PASSWORD_MAX, &new_pw, resp) ||
        !pgjson_field_str(body, "new_password2", true, 1, PASSWORD_MAX, &new_pw2, resp)) {
        json_decref(body);
        return;
    }
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) {
        json_decref(body);
        return;
    }
    auth_caller c;
    if (!caller_resolve(conn, req, resp, &c)) goto out;
    if (strcmp(new_pw, new_pw2) != 0) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "new_password and new_password2 differ");
        goto out;
    }
    if (strlen(new_pw) < PASSWORD_MIN) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "the new password must be at least %d characters", PASSWORD_MIN);
        goto out;
    }
    const char *p[] = {c.user_id};
    PGresult *r = pgjson_query(conn, resp, "read password",
                               "SELECT password_hash FROM auth.users WHERE id = $1::uuid", 1, p);
    if (!r) goto out;
    /* Two argon2id computations: without holding a connection. */
    pgjson_put(s, conn);
    conn = NULL;
    bool ok = PQntuples(r) == 1 && password_verify(PQgetvalue(r, 0, 0), old_pw);
    PQclear(r);
    if (!ok) {
        http_problem(resp, 401, "auth-failed", NULL, "the old password is wrong");
        goto out;
    }
    char hash[PASSWORD_HASH_MAX];
    if (!password_hash(new_pw, hash)) {
        http_problem(resp, 503, "service-unavailable", NULL, "could not hash the password");
        goto out;
    }
    conn = pgjson_get(s, resp);
    if (!conn) goto out;
    const char *up[] = {c.user_id, hash};
    r = pgjson_query(conn, resp, "update password",
                     "UPDATE auth.users SET password_hash = $2, password_changed_at = now(),"
                     " modified_at = now() WHERE id = $1::uuid RETURNING " EVENTS_USER_COLUMNS,
                     2, up);
    if (!r) goto out;
    json_t *user = PQntuples(r) == 1 ? pgjson_row_json(r, 0) : NULL;
    PQclear(r);
    if (user) {
        events_user_changed(s, req->request_id, AUTH_CHANGE_UPDATED, user);
        json_decref(user);
    }
    TLOG_INFO("password changed", "");
    http_reply_json(resp, 200, json_object());
out:
    pgjson_put(s, conn);
    json_decref(body);
}

void login_routes(svc *s)
{
    http_route(svc_router(s), "POST", "/v1/authorize", h_authorize, s);
    http_route(svc_router(s), "GET", "/v1/role", h_role, s);
    http_route(svc_router(s), "POST", "/v1/update-password", h_update_password, s);
}
