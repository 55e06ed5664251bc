/* access.c: authorize one request from its token or cookie (access.h).
 *
 * 1. A ?token=... names a route (Redis, cached <= 1 s). In subdomain mode the
 *    Host's first label must be that route's app hash, else 403 (a TCP
 *    route may be reached at any host name: a tunnel has no origin). Unless the
 *    request already has a valid cookie for the same route, a cookie is minted
 *    (route:<cookie>, TTL wsproxy.cookie_ttl) and set on the response; on one
 *    shared address (no subdomains) the other apps' cookies are cleared so the
 *    browser holds one.
 * 2. Else the cookie: in subdomain mode tessera_app_<hash of the Host>; on a
 *    shared address the only tessera_app_* cookie (several: 409).
 * A route whose session's routes are gone was revoked: its keys are deleted
 * with the set, so the lookup fails (401). */
#include "services/wsproxy/access.h"

#include "libcommon/log.h"
#include "services/wsproxy/tokens.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_APP_COOKIES 8

/* A token or cookie -> its route: true when Redis (or the cache) answered,
 * *found when it names a route. */
static bool lookup(worker *w, const char *key, route *out, bool *found)
{
    if (route_cache_get(w->cache, key, w->now_ms, out, found)) return true;
    rds *rd = worker_redis(w);
    if (!rd) return false;
    ts_err err;
    if (!routes_lookup(rd, key, out, found, &err)) {
        TLOG_WARN("route lookup failed", "error=\"%s\"", err.msg);
        return false;
    }
    route_cache_put(w->cache, key, *found ? out : NULL, w->now_ms);
    return true;
}

static bool refuse(acc_decision *d, acc_result res, const char *why)
{
    d->res = res;
    d->why = why;
    return false;
}

/* A token (cookie false) or a cookie value -> its route in d->rt; false with
 * the refusal in d. */
static bool find_route(worker *w, const char *value, size_t len, bool cookie, acc_decision *d)
{
    if (!ts_token_syntax_ok(value, len))
        return refuse(d, ACC_UNKNOWN, cookie ? "malformed cookie" : "malformed token");
    char key[TOK_LEN + 1];
    memcpy(key, value, TOK_LEN);
    key[TOK_LEN] = '\0';
    bool found;
    if (!lookup(w, key, &d->rt, &found)) return refuse(d, ACC_UNAVAILABLE, "redis unavailable");
    if (cookie) {
        if (found && d->rt.is_cookie) return true;
        return refuse(d, ACC_UNKNOWN, "unknown or expired cookie");
    }
    if (!found) return refuse(d, ACC_UNKNOWN, "unknown or expired token");
    /* A cookie value is not a link token. */
    if (d->rt.is_cookie) return refuse(d, ACC_UNKNOWN, "cookie value used as a token");
    return true;
}

static bool same_app(const route *a, const route *b)
{
    return strcmp(a->hash, b->hash) == 0 && strcmp(a->user_id, b->user_id) == 0 &&
           strcmp(a->session_id, b->session_id) == 0 && strcmp(a->app, b->app) == 0;
}

static void add_cookie_line(char **acc, const char *hash, const char *value,
                            const proxy_config *cfg)
{
    char line[256];
    tok_set_cookie(line, sizeof(line), hash, value, (long)(cfg->cookie_ttl_ms / 1000),
                   cfg->secure_cookies);
    char *s = ts_asprintf("%sSet-Cookie: %s\r\n", *acc ? *acc : "", line);
    free(*acc);
    *acc = s;
}

/* The request holds a good cookie for d->rt's app already? */
static bool holds_cookie(worker *w, const tok_cookie *cookies, int n_cookies, const route *rt)
{
    for (int i = 0; i < n_cookies && i < MAX_APP_COOKIES; i++) {
        if (strcmp(cookies[i].hash, rt->hash) != 0 ||
            !ts_token_syntax_ok(cookies[i].value, cookies[i].value_len))
            continue;
        char ck[TOK_LEN + 1];
        memcpy(ck, cookies[i].value, TOK_LEN);
        ck[TOK_LEN] = '\0';
        route cr;
        bool found;
        if (lookup(w, ck, &cr, &found) && found && cr.is_cookie && same_app(&cr, rt)) return true;
    }
    return false;
}

static void by_token(worker *w, const char *tok, size_t tlen, const tok_cookie *cookies,
                     int n_cookies, const char *host_hash, acc_decision *d)
{
    if (!find_route(w, tok, tlen, false, d)) return;
    if (host_hash && strcmp(host_hash, d->rt.hash) != 0) {
        refuse(d, ACC_FOREIGN, "token for another app, session or user");
        return;
    }
    /* In subdomain mode an HTTP app is served at its own host name only: at
     * any other (wsproxy's bare address, the console's host) its pages would
     * share an origin or a site's cookies. A TCP tunnel has no origin. */
    if (w->cfg->subdomain_mode && !host_hash && d->rt.proto != ROUTE_TCP) {
        refuse(d, ACC_FOREIGN, "an app's link used at a host name that is not the app's");
        return;
    }
    d->res = ACC_OK;
    d->via_token = true;
    if (holds_cookie(w, cookies, n_cookies, &d->rt)) return;
    if (d->rt.proto == ROUTE_TCP) return; /* tunnels need no cookie */
    rds *rd = worker_redis(w);
    char cookie[TOK_LEN + 1];
    bool ok = false;
    ts_err err;
    if (!rd || !routes_mint_cookie(rd, &d->rt, w->cfg->cookie_ttl_ms, cookie, &ok, &err)) {
        refuse(d, ACC_UNAVAILABLE, "redis unavailable");
        return;
    }
    if (!ok) {
        refuse(d, ACC_UNKNOWN, "session routes removed");
        return;
    }
    add_cookie_line(&d->set_cookie, d->rt.hash, cookie, w->cfg);
    if (!w->cfg->subdomain_mode) {
        for (int i = 0; i < n_cookies && i < MAX_APP_COOKIES; i++)
            if (strcmp(cookies[i].hash, d->rt.hash) != 0)
                add_cookie_line(&d->set_cookie, cookies[i].hash, NULL, w->cfg);
    }
}

static void by_cookie(worker *w, const tok_cookie *cookies, int n_cookies, const char *host_hash,
                      acc_decision *d)
{
    const tok_cookie *pick = NULL;
    if (host_hash) {
        for (int i = 0; i < n_cookies && i < MAX_APP_COOKIES; i++)
            if (strcmp(cookies[i].hash, host_hash) == 0) pick = &cookies[i];
    } else if (n_cookies == 1) {
        pick = &cookies[0];
    } else if (n_cookies > 1) {
        refuse(d, ACC_AMBIGUOUS, "several app cookies on a shared address");
        return;
    }
    if (!pick) {
        refuse(d, ACC_UNKNOWN, "no token or app cookie");
        return;
    }
    if (!find_route(w, pick->value, pick->value_len, true, d)) return;
    if (strcmp(d->rt.hash, pick->hash) != 0) {
        refuse(d, ACC_FOREIGN, "cookie of another app");
        return;
    }
    d->res = ACC_OK;
}

void access_decide(worker *w, const h1_msg *m, acc_decision *d)
{
    memset(d, 0, sizeof(*d));
    char hh[TOK_HASH_LEN + 1];
    const char *host_hash = NULL;
    if (w->cfg->subdomain_mode && m->host && tok_host_hash(m->host, m->host_len, hh))
        host_hash = hh;

    tok_cookie cookies[MAX_APP_COOKIES];
    int n_cookies = 0;
    for (int i = 0; i < m->n_headers; i++) {
        const h1_header *h = &m->headers[i];
        if (!h1_span_eq(h->name, h->name_len, "cookie")) continue;
        if (n_cookies < MAX_APP_COOKIES)
            n_cookies += tok_cookie_apps(h->value, h->value_len, cookies + n_cookies,
                                         MAX_APP_COOKIES - n_cookies);
    }
    if (n_cookies > MAX_APP_COOKIES) n_cookies = MAX_APP_COOKIES;

    const char *tok;
    size_t tlen;
    if (tok_query_token(m->target, m->target_len, &tok, &tlen)) {
        by_token(w, tok, tlen, cookies, n_cookies, host_hash, d);
        return;
    }
    if (w->cfg->subdomain_mode && !host_hash) {
        refuse(d, ACC_UNKNOWN, "no app in the host name");
        return;
    }
    by_cookie(w, cookies, n_cookies, host_hash, d);
}

const char *access_result_name(acc_result r)
{
    switch (r) {
    case ACC_UNKNOWN:
        return "unknown";
    case ACC_FOREIGN:
        return "foreign";
    case ACC_AMBIGUOUS:
        return "ambiguous";
    case ACC_UNAVAILABLE:
        return "unavailable";
    default:
        return "ok";
    }
}

int access_status(acc_result r)
{
    return r == ACC_UNKNOWN ? 401 : r == ACC_FOREIGN ? 403 : r == ACC_AMBIGUOUS ? 409 : 503;
}
