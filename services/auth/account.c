/* account.c: the caller's own full name and sign-out (see account.h). */
#include "account.h"

#include "admin.h"
#include "libcommon/log.h"
#include "password.h"
#include "users.h"

#include <string.h>
#include <strings.h>

#define FULL_NAME_MAX 64

/* 403 unless email names the caller (case-insensitively, as logins match). */
static bool _own_email(const admin_req *a, const char *email)
{
    if (strcasecmp(email, a->c.email) == 0) return true;
    http_problem(a->fr.resp, 403, "forbidden", NULL, "not the account owner: %s is not your email",
                 email);
    return false;
}

/* ---- POST /v1/auth/update-full-name ------------------------------------ */

static void h_update_full_name(http_req *req, http_resp *resp, void *ctx)
{
    json_t *body = http_json_body(req, resp);
    if (!body) return;
    static const char *const keys[] = {"email", "full_name", NULL};
    const char *email, *full_name;
    admin_req a;
    if (!pgjson_only_keys(body, keys, resp) ||
        !pgjson_field_str(body, "email", true, 1, 254, &email, resp) ||
        !pgjson_field_str(body, "full_name", true, 0, FULL_NAME_MAX, &full_name, resp) ||
        !admin_begin(&a, ctx, req, resp, REQ_ANY, NULL)) {
        json_decref(body);
        return;
    }
    if (_own_email(&a, email)) {
        const char *p[] = {a.c.user_id, full_name};
        PGresult *r = pgjson_query(a.fr.conn, resp, "update full name",
                                   "UPDATE auth.users SET full_name = $2, modified_at = now()"
                                   " WHERE id = $1::uuid RETURNING " EVENTS_USER_COLUMNS,
                                   2, p);
        if (r) {
            if (PQntuples(r) == 1) {
                json_t *user = pgjson_row_json(r, 0);
                events_user_changed(a.fr.s, req->request_id, AUTH_CHANGE_UPDATED, user);
                json_decref(user);
            }
            TLOG_INFO("full name changed", "");
            http_reply_json(resp, 200, json_object());
            PQclear(r);
        }
    }
    json_decref(body);
    admin_end(&a);
}

/* ---- POST /v1/auth/signout --------------------------------------------- */

/* The password check, without holding the connection while hashing. */
static bool _password_ok(admin_req *a, const char *password)
{
    const char *p[] = {a->c.user_id};
    PGresult *r = pgjson_query(a->fr.conn, a->fr.resp, "read password",
                               "SELECT password_hash FROM auth.users WHERE id = $1::uuid", 1, p);
    if (!r) return false;
    pgjson_put(a->fr.s, a->fr.conn);
    bool ok = PQntuples(r) == 1 && password_verify(PQgetvalue(r, 0, 0), password);
    PQclear(r);
    a->fr.conn = pgjson_get(a->fr.s, a->fr.resp);
    if (!a->fr.conn) return false; /* 503 answered */
    if (!ok) http_problem(a->fr.resp, 401, "auth-failed", NULL, "the password is wrong");
    return ok;
}

/* A platform keeps one active superadmin: the last one may not sign out. */
static bool _not_last_superadmin(admin_req *a)
{
    if (!caller_is_superadmin(&a->c)) return true;
    PGresult *r = pgjson_query(a->fr.conn, a->fr.resp, "count superadmins",
                               "SELECT count(*) FROM auth.users"
                               " WHERE role = 'superadmin' AND status = 'active'",
                               0, NULL);
    if (!r) return false;
    bool ok = strcmp(PQgetvalue(r, 0, 0), "1") != 0;
    PQclear(r);
    if (!ok)
        http_problem(a->fr.resp, 409, "conflict", NULL,
                     "the last active superadmin cannot sign out (make another one first)");
    return ok;
}

static void h_signout(http_req *req, http_resp *resp, void *ctx)
{
    json_t *body = http_json_body(req, resp);
    if (!body) return;
    /* The SDK sends the email as "username" (Backend.AI takes either). */
    static const char *const keys[] = {"email", "username", "password", NULL};
    const char *email, *username, *password;
    admin_req a;
    if (!pgjson_only_keys(body, keys, resp) ||
        !pgjson_field_str(body, "email", false, 1, 254, &email, resp) ||
        !pgjson_field_str(body, "username", false, 1, 254, &username, resp) ||
        !pgjson_field_str(body, "password", true, 1, PASSWORD_MAX, &password, resp)) {
        json_decref(body);
        return;
    }
    if (!email) email = username;
    if (!email) {
        http_problem(resp, 400, "invalid-api-params", NULL, "email is required");
        json_decref(body);
        return;
    }
    if (!admin_begin(&a, ctx, req, resp, REQ_ANY, NULL)) {
        json_decref(body);
        return;
    }
    PGresult *keys_r = NULL;
    if (_own_email(&a, email) && _password_ok(&a, password) && _not_last_superadmin(&a) &&
        pgjson_begin(a.fr.conn, resp)) {
        if (!users_retire(&a, a.c.user_id, "inactive", &keys_r)) {
            pg_rollback(a.fr.conn);
        } else if (pgjson_commit(a.fr.conn, resp)) {
            const char *p[] = {a.c.user_id};
            PGresult *u = pgjson_query(a.fr.conn, NULL, "reload user",
                                       "SELECT " EVENTS_USER_COLUMNS " FROM auth.users"
                                       " WHERE id = $1::uuid",
                                       1, p);
            if (u && PQntuples(u) == 1) {
                json_t *user = pgjson_row_json(u, 0);
                events_user_changed(a.fr.s, req->request_id, AUTH_CHANGE_UPDATED, user);
                json_decref(user);
            }
            if (u) PQclear(u);
            for (int i = 0; i < PQntuples(keys_r); i++)
                events_keypair_revoked(a.fr.s, req->request_id, PQgetvalue(keys_r, i, 0),
                                       a.c.user_id, "user-deactivated", a.c.user_id);
            TLOG_INFO("user signed out (deactivated)", "keypairs_revoked=%d", PQntuples(keys_r));
            http_reply_json(resp, 200, json_object());
        }
    }
    if (keys_r) PQclear(keys_r);
    json_decref(body);
    admin_end(&a);
}

void account_routes(svc *s)
{
    http_route(svc_router(s), "POST", "/v1/auth/update-full-name", h_update_full_name, s);
    http_route(svc_router(s), "POST", "/v1/auth/signout", h_signout, s);
}
