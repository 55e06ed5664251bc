/* sso_login.c: the single sign-on login (sso_login.h). */
#include "sso_login.h"

#include "libcommon/pgjson.h"
#include "libcommon/log.h"
#include "login_grant.h"
#include "sso_token.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SECRET_FILE_MAX 4096

static unsigned char g_secret[SECRET_FILE_MAX];
static size_t g_secret_len;
static sso_opts g_opts;

bool sso_login_configure(const sso_config *c, ts_err *err)
{
    g_secret_len = 0;
    g_opts =
        (sso_opts){.issuer = c->issuer, .audience = c->audience, .max_age_s = c->max_age_ms / 1000};
    if (!c->secret_file || !*c->secret_file) return true;
    FILE *f = fopen(c->secret_file, "re");
    if (!f) {
        ts_err_set(err, "auth.sso_secret_file %s cannot be read", c->secret_file);
        return false;
    }
    size_t n = fread(g_secret, 1, sizeof(g_secret), f);
    bool too_long = n == sizeof(g_secret) && fgetc(f) != EOF;
    fclose(f);
    while (n > 0 && (g_secret[n - 1] == '\n' || g_secret[n - 1] == '\r'))
        n--;
    if (too_long || n < SSO_SECRET_MIN) {
        sodium_memzero(g_secret, sizeof(g_secret));
        ts_err_set(err, "auth.sso_secret_file %s must hold %d to %d bytes", c->secret_file,
                   SSO_SECRET_MIN, SECRET_FILE_MAX - 1);
        return false;
    }
    g_secret_len = n;
    g_opts.secret = g_secret;
    g_opts.secret_len = n;
    TLOG_INFO("single sign-on enabled", "issuer=\"%s\" audience=\"%s\" max_age_s=%lld",
              c->issuer ? c->issuer : "", c->audience ? c->audience : "",
              (long long)g_opts.max_age_s);
    return true;
}

bool sso_login_enabled(void)
{
    return g_secret_len > 0;
}

static const char user_sql[] = "SELECT id::text, role, status, email FROM auth.users"
                               " WHERE lower(email) = lower($1)";

/* The token's jti, recorded until it expires; the expired ones go. */
static const char use_sql[] =
    "WITH gone AS (DELETE FROM auth.sso_used_tokens WHERE expires_at < now() - interval '1 minute')"
    " INSERT INTO auth.sso_used_tokens (jti, expires_at)"
    " VALUES ($1, to_timestamp($2::bigint) + interval '1 minute')"
    " ON CONFLICT (jti) DO NOTHING RETURNING jti";

void sso_login_authorize(svc *s, http_req *req, http_resp *resp, json_t *body)
{
    static const char *const keys[] = {"type", "token", "client_addr", NULL};
    const char *token, *client_addr;
    if (!pgjson_only_keys(body, keys, resp) ||
        !pgjson_field_str(body, "token", true, 1, SSO_TOKEN_MAX, &token, resp) ||
        !pgjson_field_str(body, "client_addr", false, 0, 128, &client_addr, resp))
        return;
    char qaddr[160];
    tlog_quote(qaddr, sizeof(qaddr), client_addr ? client_addr : req->client_addr);
    if (!sso_login_enabled()) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "single sign-on is not configured (auth.sso_secret_file)");
        return;
    }
    sso_claims cl;
    ts_err err = {{0}};
    if (!sso_token_verify(token, &g_opts, ts_now_wall_ms() / 1000, &cl, &err)) {
        TLOG_INFO("token login refused", "client=%s why=\"%s\"", qaddr, err.msg);
        http_problem(resp, 401, "auth-failed", NULL, "%s", err.msg);
        return;
    }
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) return;
    char exp[24];
    snprintf(exp, sizeof(exp), "%lld", (long long)cl.exp);
    const char *up[] = {cl.jti, exp};
    PGresult *used = pgjson_query(conn, resp, "record token", use_sql, 2, up);
    const char *ep[] = {cl.email};
    PGresult *u = used ? pgjson_query(conn, resp, "find user", user_sql, 1, ep) : NULL;
    if (!used || !u) {
        /* the problem is set */
    } else if (PQntuples(used) != 1) {
        TLOG_WARN("token login refused: token used before", "client=%s", qaddr);
        http_problem(resp, 401, "auth-failed", NULL, "this token was used already");
    } else if (PQntuples(u) != 1) {
        TLOG_INFO("token login refused: unknown user", "client=%s", qaddr);
        http_problem(resp, 401, "auth-failed", NULL, "the token names no user of this cluster");
    } else if (strcmp(PQgetvalue(u, 0, 2), "active") != 0) {
        tlog_ctx_user(PQgetvalue(u, 0, 0));
        http_problem(resp, 401, "auth-failed", NULL, "this user account is %s",
                     PQgetvalue(u, 0, 2));
    } else {
        tlog_ctx_user(PQgetvalue(u, 0, 0));
        login_grant(conn, resp, PQgetvalue(u, 0, 0), PQgetvalue(u, 0, 1), PQgetvalue(u, 0, 2),
                    PQgetvalue(u, 0, 3), "token login", qaddr);
    }
    if (used) PQclear(used);
    if (u) PQclear(u);
    pgjson_put(s, conn);
}
