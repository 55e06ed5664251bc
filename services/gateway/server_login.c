/* server_login.c: /server/login, /server/login-check, /server/logout
 * (server_login.h). */
#include "server_login.h"

#include "libcommon/log.h"
#include "proxy.h"
#include "web_payload.h"
#include "websession.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define WEB_LOGIN_NAME_MAX 254
#define WEB_LOGIN_PASSWORD_MAX 1024

/* The answer for a live login; with_csrf: with its CSRF token. */
static json_t *_who(const websession *ws, const cred *c, bool with_csrf)
{
    json_t *o =
        json_pack("{s:b, s:{s:s, s:s, s:s, s:s, s:s, s:s}}", "authenticated", 1, "data",
                  "access_key", c->access_key, "user_id", c->user_id, "username", ws->username,
                  "role", c->role, "domain", c->domain, "status", c->user_status);
    if (with_csrf) json_object_set_new(o, "csrf_token", json_string(ws->csrf));
    return o;
}

/* A string member of body, 1..max bytes; NULL when absent and !required. */
static bool _field(json_t *body, const char *name, bool required, size_t max, const char **out,
                   http_resp *resp)
{
    json_t *v = json_object_get(body, name);
    *out = json_string_value(v);
    if (!v && !required) return true;
    if (!*out || !**out || strlen(*out) > max) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "%s must be a non-empty string of at most %zu bytes", name, max);
        return false;
    }
    return true;
}

/* A login tessera-auth granted (got: its answer, naming the keypair): the
 * browser session made, its cookie set, the answer sent. */
static void _start_login(gateway *gw, http_req *req, http_resp *resp, const json_t *got,
                         const char *user, const char *how)
{
    const char *ak = json_string_value(json_object_get(json_object_get(got, "data"), "access_key"));
    cred c;
    ts_err err = {{0}};
    authcache_result found = ak ? credentials_get(gw->creds, ak, &c, &err) : AUTHCACHE_NOT_FOUND;
    sodium_memzero(c.secret_key, sizeof(c.secret_key));
    websession ws;
    char sid[TS_TOKEN_LEN + 1];
    if (found == AUTHCACHE_UNAVAILABLE) {
        TLOG_WARN("login: credential look-up failed", "error=\"%s\"", err.msg);
        http_problem(resp, 503, "service-unavailable", NULL,
                     "tessera-auth is not answering; try again later");
    } else if (found != AUTHCACHE_FOUND) {
        http_problem(resp, 502, "bad-gateway", NULL, "tessera-auth named no usable keypair");
    } else if (!websession_create(gw, c.access_key, c.user_id, user, &ws, sid, &err)) {
        TLOG_WARN("login: session not stored", "error=\"%s\"", err.msg);
        http_problem(resp, 503, "service-unavailable", NULL,
                     "the login cannot be stored now (Redis); try again later");
    } else {
        tlog_ctx_user(c.user_id);
        tlog_ctx_access_key(c.access_key);
        TLOG_INFO(how, "client=\"%s\"", req->client_addr);
        websession_count(WEBSESSION_LOGIN);
        websession_set_cookie(gw, req, resp, sid);
        http_set_header(resp, "Cache-Control", "no-store");
        http_reply_json(resp, 200, _who(&ws, &c, true));
        sodium_memzero(sid, sizeof(sid));
    }
}

/* A refused login as Backend.AI's web server answers it to its clients:
 * 200, not authenticated, the reason in data (its SDKs read that, and take
 * any error status for an unreachable server). */
static void _refused_as_webserver(http_resp *resp)
{
    size_t len = 0;
    const char *pb = http_resp_body(resp, &len);
    json_t *p = pb ? json_loadb(pb, len, 0, NULL) : NULL;
    const char *msg = json_string_value(json_object_get(p, "msg"));
    http_reply_json(resp, 200,
                    json_pack("{s:b, s:{s:s, s:s, s:s}}", "authenticated", 0, "data", "type",
                              "https://api.backend.ai/probs/auth-failed", "title",
                              "Authentication failed", "details",
                              msg ? msg : "wrong user name or password"));
    json_decref(p);
}

static void h_login(http_req *req, http_resp *resp, void *ctx)
{
    gateway *gw = ctx;
    if (!websession_origin_ok(gw, req, resp)) return;
    /* JSON, or Backend.AI's encoded body: either way the request carries
     * what a form of another site cannot send without a CORS preflight
     * (a JSON type, a custom header) */
    bool encoded = web_payload_encoded(req);
    char media[64];
    sign_media_type(http_header(req, "Content-Type"), media, sizeof(media));
    if (!encoded && strcmp(media, "application/json") != 0) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "send the login as application/json: {\"username\", \"password\"}");
        return;
    }
    json_t *body = encoded ? web_payload_decode(req, resp) : http_json_body(req, resp);
    if (!body) return;
    const char *user, *password, *domain;
    if (!_field(body, "username", true, WEB_LOGIN_NAME_MAX, &user, resp) ||
        !_field(body, "password", true, WEB_LOGIN_PASSWORD_MAX, &password, resp) ||
        !_field(body, "domain", false, 64, &domain, resp)) {
        json_decref(body);
        return;
    }
    json_t *ask = json_pack("{s:s, s:s, s:s, s:s}", "type", "keypair", "username", user, "password",
                            password, "client_addr", req->client_addr);
    if (domain) json_object_set_new(ask, "domain", json_string(domain));
    json_t *got = NULL;
    bool ok = proxy_call_json(&gw->up[UPSTREAM_AUTH], gw->auth_timeout_ms, "POST", req, resp,
                              "/v1/authorize", NULL, ask, 200, &got);
    json_decref(ask);
    if (!ok) {
        websession_count(WEBSESSION_LOGIN_FAILED);
        /* Backend.AI's clients (they send X-BackendAI-Version; the console
         * does not) read a wrong password from a 200 */
        if (http_resp_status(resp) == 401 && http_header(req, "X-BackendAI-Version"))
            _refused_as_webserver(resp);
        json_decref(body);
        return;
    }
    _start_login(gw, req, resp, got, user, encoded ? "login (encoded)" : "console login");
    json_decref(got);
    json_decref(body);
}

static void h_login_check(http_req *req, http_resp *resp, void *ctx)
{
    gateway *gw = ctx;
    if (!websession_origin_ok(gw, req, resp)) return;
    websession ws;
    ts_err err = {{0}};
    http_set_header(resp, "Cache-Control", "no-store");
    switch (websession_find(gw, req, &ws, &err)) {
    case WEBSESSION_FOUND:
        break;
    case WEBSESSION_NONE:
        http_reply_json(resp, 200, json_pack("{s:b}", "authenticated", 0));
        return;
    case WEBSESSION_UNAVAILABLE:
        http_problem(resp, 503, "service-unavailable", NULL,
                     "the console login cannot be checked now; try again later");
        return;
    }
    cred c;
    authcache_result found = credentials_get(gw->creds, ws.access_key, &c, &err);
    sodium_memzero(c.secret_key, sizeof(c.secret_key));
    if (found == AUTHCACHE_UNAVAILABLE) {
        http_problem(resp, 503, "service-unavailable", NULL,
                     "tessera-auth is not answering; try again later");
    } else if (found == AUTHCACHE_FOUND && c.key_active && strcmp(c.user_status, "active") == 0) {
        /* The token only to the console's own page: a cookie replayed
         * elsewhere does not also yield it (docs/security.md). */
        http_reply_json(resp, 200, _who(&ws, &c, websession_from_page(gw, req)));
    } else {
        if (!websession_end(gw, &ws, false, &err))
            TLOG_WARN("console session not ended", "error=\"%s\"", err.msg);
        websession_count(WEBSESSION_ENDED);
        websession_set_cookie(gw, req, resp, NULL);
        http_reply_json(resp, 200, json_pack("{s:b}", "authenticated", 0));
    }
}

static void h_logout(http_req *req, http_resp *resp, void *ctx)
{
    gateway *gw = ctx;
    websession ws;
    if (!websession_admit(gw, req, resp, &ws)) return;
    bool everywhere = false;
    if (req->body_len > 0) {
        json_t *body = http_json_body(req, resp);
        if (!body) return;
        json_t *e = json_object_get(body, "everywhere");
        if (e && !json_is_boolean(e)) {
            http_problem(resp, 400, "invalid-api-params", NULL, "everywhere must be a boolean");
            json_decref(body);
            return;
        }
        everywhere = json_is_true(e);
        json_decref(body);
    }
    ts_err err = {{0}};
    if (!websession_end(gw, &ws, everywhere, &err)) {
        TLOG_WARN("console logout failed", "error=\"%s\"", err.msg);
        http_problem(resp, 503, "service-unavailable", NULL,
                     "the logout cannot be stored now (Redis); try again later");
        return;
    }
    tlog_ctx_user(ws.user_id);
    TLOG_INFO("console logout", "everywhere=%s", everywhere ? "true" : "false");
    websession_count(WEBSESSION_LOGOUT);
    websession_set_cookie(gw, req, resp, NULL);
    http_reply_json(resp, 200, json_pack("{s:b}", "authenticated", 0));
}

/* POST /server/token-login: single sign-on, as Backend.AI's webserver: the
 * token in the body's gateway.token_login_name field or that cookie,
 * verified by tessera-auth ({"type": "token"}); then as a password login. */
static void h_token_login(http_req *req, http_resp *resp, void *ctx)
{
    gateway *gw = ctx;
    if (!websession_origin_ok(gw, req, resp)) return;
    const char *name =
        gw->token_login_name && *gw->token_login_name ? gw->token_login_name : "sToken";
    json_t *body = req->body_len ? http_json_body(req, resp) : json_object();
    if (!body) return;
    websession ws;
    ts_err err = {{0}};
    char *token = NULL;
    const json_t *tv = json_object_get(body, name);
    size_t clen = 0;
    const char *cv = websession_cookie(http_header(req, "Cookie"), name, &clen);
    if (tv && !json_is_string(tv)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "%s must be a string", name);
    } else if (websession_find(gw, req, &ws, &err) == WEBSESSION_FOUND) {
        http_problem(resp, 400, "generic-bad-request", "You have already logged in.",
                     "log out first (POST /server/logout)");
    } else if (tv) {
        token = ts_strdup(json_string_value(tv));
    } else if (cv) {
        token = ts_strndup(cv, clen);
    } else {
        http_problem(resp, 400, "invalid-api-params",
                     "You must provide cookie-based authentication token",
                     "no %s in the body or the cookies", name);
    }
    json_decref(body);
    if (!token) return;
    json_t *ask = json_pack("{s:s, s:s, s:s}", "type", "token", "token", token, "client_addr",
                            req->client_addr);
    sodium_memzero(token, strlen(token));
    free(token);
    json_t *got = NULL;
    bool ok = proxy_call_json(&gw->up[UPSTREAM_AUTH], gw->auth_timeout_ms, "POST", req, resp,
                              "/v1/authorize", NULL, ask, 200, &got);
    json_decref(ask);
    if (ok) {
        const char *email =
            json_string_value(json_object_get(json_object_get(got, "data"), "email"));
        _start_login(gw, req, resp, got, email ? email : "", "token login");
    } else if (http_resp_status(resp) == 401) {
        /* as the reference: 200, not authenticated, with the reason */
        websession_count(WEBSESSION_LOGIN_FAILED);
        _refused_as_webserver(resp);
    }
    json_decref(got);
}

void server_login_routes(gateway *gw)
{
    http_router *r = svc_router(gw->svc);
    http_route(r, "POST", "/server/login", h_login, gw);
    http_route(r, "GET", "/server/login-check", h_login_check, gw);
    http_route(r, "POST", "/server/login-check", h_login_check, gw); /* Backend.AI's SDK posts */
    http_route(r, "POST", "/server/logout", h_logout, gw);
    http_route(r, "POST", "/server/token-login", h_token_login, gw);
    http_router_mount(r, "/func");
    websession_init(gw);
}
