/* websession.c: the console's browser sessions in Redis (websession.h). */
#include "websession.h"

#include "libcommon/log.h"
#include "libcommon/origins.h"

#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const EVENT_NAMES[WEBSESSION_N_EVENTS] = {
    [WEBSESSION_LOGIN] = "login",     [WEBSESSION_LOGIN_FAILED] = "login_failed",
    [WEBSESSION_LOGOUT] = "logout",   [WEBSESSION_ENDED] = "ended",
    [WEBSESSION_REFUSED] = "refused",
};
static _Atomic uint64_t g_events[WEBSESSION_N_EVENTS];

/* KEYS: the session, the user's set. ARGV: ak, uid, user, csrf, created,
 * idle TTL (s), the set's TTL (s). */
static rds_script g_create = {
    .source = "redis.call('HSET', KEYS[1], 'ak', ARGV[1], 'uid', ARGV[2], 'user', ARGV[3],"
              " 'csrf', ARGV[4], 'created', ARGV[5])\n"
              "redis.call('EXPIRE', KEYS[1], ARGV[6])\n"
              "redis.call('SADD', KEYS[2], KEYS[1])\n"
              "redis.call('EXPIRE', KEYS[2], ARGV[7])\n"
              "return 1\n",
};
/* KEYS: the session. ARGV: idle TTL (s). The fields, renewed; nil: none. */
static rds_script g_find = {
    .source = "local v = redis.call('HMGET', KEYS[1], 'ak', 'uid', 'user', 'csrf', 'created')\n"
              "if not v[1] then return nil end\n"
              "redis.call('EXPIRE', KEYS[1], ARGV[1])\n"
              "return v\n",
};
/* KEYS: the session, the user's set. ARGV: "all" to end every session of
 * the user. */
static rds_script g_end = {
    .source = "if ARGV[1] == 'all' then\n"
              "  for _, k in ipairs(redis.call('SMEMBERS', KEYS[2])) do redis.call('DEL', k) end\n"
              "  redis.call('DEL', KEYS[2])\n"
              "else\n"
              "  redis.call('SREM', KEYS[2], KEYS[1])\n"
              "end\n"
              "redis.call('DEL', KEYS[1])\n"
              "return 1\n",
};

static void _collect(FILE *out, void *ctx)
{
    (void)ctx;
    char labels[48];
    metrics_family(out, "tessera_gateway_web_sessions_total", "counter",
                   "Console browser sessions: logins, failed logins, logouts, sessions ended by "
                   "their keypair, user or age, and refused session-mode requests.");
    for (int i = 0; i < WEBSESSION_N_EVENTS; i++) {
        snprintf(labels, sizeof(labels), "event=\"%s\"", EVENT_NAMES[i]);
        metrics_sample_u64(out, "tessera_gateway_web_sessions_total", labels,
                           atomic_load(&g_events[i]));
    }
}

void websession_init(gateway *gw)
{
    metrics_add(svc_metrics(gw->svc), _collect, gw);
}

void websession_count(websession_event e)
{
    atomic_fetch_add(&g_events[e], 1);
}

/* ---- keys ------------------------------------------------------------------------- */

static void _key_of(const char *sid, char out[65])
{
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, (const unsigned char *)sid, strlen(sid));
    sodium_bin2hex(out, 65, h, sizeof(h));
}

static void _redis_keys(const char *key, const char *user_id, char skey[96], char ukey[128])
{
    snprintf(skey, 96, "websess:%s", key);
    snprintf(ukey, 128, "websess:user:%s", user_id);
}

static bool _run(gateway *gw, rds_script *script, int nkeys, int argc, const char **argv,
                 redisReply **out, ts_err *err)
{
    rds *r = svc_redis(gw->svc, err);
    if (!r) return false;
    redisReply *rep = rds_eval(r, script, nkeys, argc, argv, NULL, err);
    if (!rep) return false;
    if (rep->type == REDIS_REPLY_ERROR) {
        ts_err_set(err, "Redis script: %s", rep->str);
        freeReplyObject(rep);
        return false;
    }
    *out = rep;
    return true;
}

/* ---- sessions --------------------------------------------------------------------- */

bool websession_create(gateway *gw, const char *access_key, const char *user_id,
                       const char *username, websession *ws, char sid[TS_TOKEN_LEN + 1],
                       ts_err *err)
{
    memset(ws, 0, sizeof(*ws));
    ts_token_new(sid);
    ts_token_new(ws->csrf);
    _key_of(sid, ws->key);
    ts_strlcpy(ws->access_key, access_key, sizeof(ws->access_key));
    ts_strlcpy(ws->user_id, user_id, sizeof(ws->user_id));
    ts_strlcpy(ws->username, username, sizeof(ws->username));
    ws->created_ms = ts_now_wall_ms();

    char skey[96], ukey[128], created[24], idle[24], life[24];
    _redis_keys(ws->key, user_id, skey, ukey);
    snprintf(created, sizeof(created), "%lld", (long long)ws->created_ms);
    snprintf(idle, sizeof(idle), "%lld", (long long)(gw->web_idle_ms / 1000));
    snprintf(life, sizeof(life), "%lld", (long long)(gw->web_max_age_ms / 1000));
    const char *argv[] = {skey,     ukey,    access_key, user_id, ws->username,
                          ws->csrf, created, idle,       life};
    redisReply *rep = NULL;
    if (!_run(gw, &g_create, 2, (int)TS_ARRAY_LEN(argv), argv, &rep, err)) return false;
    freeReplyObject(rep);
    return true;
}

/* The value of cookie name in a Cookie header, or NULL; *len its length. */
const char *websession_cookie(const char *header, const char *name, size_t *len)
{
    size_t nlen = strlen(name);
    for (const char *p = header; p && *p;) {
        p += strspn(p, " \t;");
        const char *end = p + strcspn(p, ";");
        if ((size_t)(end - p) > nlen && strncmp(p, name, nlen) == 0 && p[nlen] == '=') {
            *len = (size_t)(end - p) - nlen - 1;
            while (*len && (p[nlen + *len] == ' ' || p[nlen + *len] == '\t'))
                (*len)--;
            return p + nlen + 1;
        }
        p = end;
    }
    return NULL;
}

websession_found websession_find(gateway *gw, const http_req *req, websession *ws, ts_err *err)
{
    memset(ws, 0, sizeof(*ws));
    size_t len = 0;
    const char *v = websession_cookie(http_header(req, "Cookie"), WEBSESSION_COOKIE "", &len);
    if (!v || !ts_token_syntax_ok(v, len)) return WEBSESSION_NONE;
    char sid[TS_TOKEN_LEN + 1];
    memcpy(sid, v, TS_TOKEN_LEN);
    sid[TS_TOKEN_LEN] = '\0';
    _key_of(sid, ws->key);
    sodium_memzero(sid, sizeof(sid));

    char skey[96], idle[24];
    snprintf(skey, sizeof(skey), "websess:%s", ws->key);
    snprintf(idle, sizeof(idle), "%lld", (long long)(gw->web_idle_ms / 1000));
    const char *argv[] = {skey, idle};
    redisReply *rep = NULL;
    if (!_run(gw, &g_find, 1, 2, argv, &rep, err)) return WEBSESSION_UNAVAILABLE;
    websession_found found = WEBSESSION_NONE;
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 5) {
        bool complete = true;
        for (size_t i = 0; i < 5; i++)
            complete = complete && rep->element[i]->type == REDIS_REPLY_STRING;
        if (complete) {
            ts_strlcpy(ws->access_key, rep->element[0]->str, sizeof(ws->access_key));
            ts_strlcpy(ws->user_id, rep->element[1]->str, sizeof(ws->user_id));
            ts_strlcpy(ws->username, rep->element[2]->str, sizeof(ws->username));
            ts_strlcpy(ws->csrf, rep->element[3]->str, sizeof(ws->csrf));
            ws->created_ms = atoll(rep->element[4]->str);
            found = WEBSESSION_FOUND;
        }
    }
    freeReplyObject(rep);
    if (found == WEBSESSION_FOUND && ts_now_wall_ms() - ws->created_ms > gw->web_max_age_ms) {
        ts_err e2 = {{0}};
        if (!websession_end(gw, ws, false, &e2))
            TLOG_WARN("an expired console session was not deleted", "error=\"%s\"", e2.msg);
        websession_count(WEBSESSION_ENDED);
        found = WEBSESSION_NONE;
    }
    return found;
}

bool websession_end(gateway *gw, const websession *ws, bool everywhere, ts_err *err)
{
    char skey[96], ukey[128];
    _redis_keys(ws->key, ws->user_id, skey, ukey);
    const char *argv[] = {skey, ukey, everywhere ? "all" : "one"};
    redisReply *rep = NULL;
    if (!_run(gw, &g_end, 2, 3, argv, &rep, err)) return false;
    freeReplyObject(rep);
    return true;
}

/* ---- admission -------------------------------------------------------------------- */

static bool _refuse(http_resp *resp, int status, const char *msg)
{
    websession_count(WEBSESSION_REFUSED);
    if (status == 401)
        http_problem(resp, 401, "auth-failed", "Authentication failed", "%s", msg);
    else if (status == 503)
        http_problem(resp, 503, "service-unavailable", NULL, "%s", msg);
    else
        http_problem(resp, status, "forbidden", NULL, "%s", msg);
    return false;
}

/* An Origin that is the gateway's own (the Host it was sent to) or one of
 * gateway.web_allowed_origins. */
static bool _origin_ours(gateway *gw, const http_req *req, const char *origin)
{
    const char *host = http_header(req, "Host");
    const char *auth = strstr(origin, "://");
    bool own = auth && host && *host && strcasecmp(auth + 3, host) == 0 &&
               (strncmp(origin, "http://", 7) == 0 || strncmp(origin, "https://", 8) == 0);
    return own || origins_listed(gw->web_origins, origin, false);
}

bool websession_origin_ok(gateway *gw, const http_req *req, http_resp *resp)
{
    const char *site = http_header(req, "Sec-Fetch-Site");
    if (site && strcmp(site, "same-origin") != 0 && strcmp(site, "none") != 0)
        return _refuse(resp, 403, "a console login can be used only from the console's own pages");
    const char *origin = http_header(req, "Origin");
    if (!origin || _origin_ours(gw, req, origin)) return true;
    return _refuse(resp, 403,
                   "requests from another origin may not use a console login (see "
                   "gateway.web_allowed_origins)");
}

bool websession_from_page(gateway *gw, const http_req *req)
{
    const char *site = http_header(req, "Sec-Fetch-Site");
    if (site && strcmp(site, "same-origin") == 0) return true;
    const char *origin = http_header(req, "Origin");
    return origin && _origin_ours(gw, req, origin);
}

bool websession_admit(gateway *gw, const http_req *req, http_resp *resp, websession *ws)
{
    if (!websession_origin_ok(gw, req, resp)) return false;
    ts_err err = {{0}};
    switch (websession_find(gw, req, ws, &err)) {
    case WEBSESSION_FOUND:
        break;
    case WEBSESSION_NONE:
        return _refuse(resp, 401, "not logged in: log in to the console again");
    case WEBSESSION_UNAVAILABLE:
        TLOG_WARN("console session look-up failed", "error=\"%s\"", err.msg);
        return _refuse(resp, 503, "the console login cannot be checked now; try again later");
    }
    const char *token = http_header(req, "X-CSRF-Token");
    /* Backend.AI's clients in session mode send no CSRF token but always
     * X-BackendAI-Version: a header a page of another site cannot add
     * without a CORS preflight, which only gateway.cors_origins get (cors.h);
     * with the origin checks above it stands in for the token. A token that
     * is sent must be right. */
    if (!token && http_header(req, "X-BackendAI-Version")) return true;
    /* An event stream (GET /events/...) is read with a browser's EventSource,
     * which sends no header of its own: a read-only GET, whose cross-site use
     * the origin checks above refuse (EventSource sends Origin cross-site). */
    const char *path = req->path;
    if (strncmp(path, "/func/", 6) == 0) path += 5;
    if (!token && strcmp(req->method, "GET") == 0 && strncmp(path, "/events/", 8) == 0) return true;
    /* A browser's WebSocket can send neither, but always sends Origin (checked
     * above) and Upgrade, a header no page can set (streams.h). */
    const char *upgrade = http_header(req, "Upgrade");
    if (!token && upgrade && strcasecmp(upgrade, "websocket") == 0 &&
        strcmp(req->method, "GET") == 0) {
        if (http_header(req, "Origin")) return true;
        return _refuse(resp, 403,
                       "a WebSocket with a console login must come from a page (Origin)");
    }
    if (!token || strlen(token) != TS_TOKEN_LEN ||
        sodium_memcmp(token, ws->csrf, TS_TOKEN_LEN) != 0)
        return _refuse(resp, 403, "missing or wrong X-CSRF-Token header");
    return true;
}

void websession_set_cookie(gateway *gw, const http_req *req, http_resp *resp, const char *sid)
{
    const char *proto = http_header(req, "X-Forwarded-Proto");
    bool secure =
        strcmp(gw->web_cookie_secure, "always") == 0 ||
        (strcmp(gw->web_cookie_secure, "auto") == 0 && proto && strcasecmp(proto, "https") == 0);
    char line[256];
    if (sid)
        snprintf(line, sizeof(line),
                 WEBSESSION_COOKIE "=%s; Path=/; Max-Age=%lld; HttpOnly; "
                                   "SameSite=Strict%s",
                 sid, (long long)(gw->web_max_age_ms / 1000), secure ? "; Secure" : "");
    else
        snprintf(line, sizeof(line),
                 WEBSESSION_COOKIE "=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict%s",
                 secure ? "; Secure" : "");
    http_set_header(resp, "Set-Cookie", line);
}
