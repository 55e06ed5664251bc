/* rds.c: Redis through hiredis: URL parsing, AUTH/SELECT, command timeout,
 * one reconnect after a lost connection, and Lua scripts by SHA (see rds.h). */
#include "libcommon/rds.h"

#include "libcommon/deps.h"
#include "libcommon/log.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

struct rds {
    char *host; /* TCP, or NULL for a unix socket */
    int port;
    char *path; /* unix socket */
    char *user, *password;
    int db;
    int timeout_ms;
    redisContext *c;
};

/* ---- URL --------------------------------------------------------------------------------- */

static bool parse_uint(const char *s, size_t len, long max, long *out)
{
    if (len == 0 || len > 10) return false;
    long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i])) return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v > max) return false;
    *out = v;
    return true;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    c = (char)tolower((unsigned char)c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decode s[0..len) into a new string; NULL if malformed. */
static char *pct_decode(const char *s, size_t len)
{
    char *out = ts_malloc(len + 1), *w = out;
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '%') {
            *w++ = s[i];
            continue;
        }
        int hi = i + 1 < len ? hexval(s[i + 1]) : -1;
        int lo = i + 2 < len ? hexval(s[i + 2]) : -1;
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            free(out);
            return NULL;
        }
        *w++ = (char)(hi * 16 + lo);
        i += 2;
    }
    *w = '\0';
    return out;
}

#define MAX_DB 1000000L

/* unix:///path[?db=N] */
static bool parse_unix(rds *r, const char *rest, ts_err *err)
{
    if (rest[0] != '/') {
        ts_err_set(err, "invalid Redis URL: unix:// needs an absolute socket path");
        return false;
    }
    const char *q = strchr(rest, '?');
    size_t plen = q ? (size_t)(q - rest) : strlen(rest);
    if (plen < 2) {
        ts_err_set(err, "invalid Redis URL: empty socket path");
        return false;
    }
    if (q) {
        long db;
        if (strncmp(q + 1, "db=", 3) != 0 || !parse_uint(q + 4, strlen(q + 4), MAX_DB, &db)) {
            ts_err_set(err, "invalid Redis URL: expected ?db=<number> after the socket path");
            return false;
        }
        r->db = (int)db;
    }
    r->path = ts_strndup(rest, plen);
    return true;
}

/* redis://[[user]:password@]host[:port][/db] */
static bool parse_tcp(rds *r, const char *rest, ts_err *err)
{
    const char *slash = strchr(rest, '/');
    size_t alen = slash ? (size_t)(slash - rest) : strlen(rest);
    const char *at = memrchr(rest, '@', alen);
    const char *hp = rest;
    if (at) {
        const char *colon = memchr(rest, ':', (size_t)(at - rest));
        if (!colon) {
            ts_err_set(err, "invalid Redis URL: expected ':password@' before the host");
            return false;
        }
        r->password = pct_decode(colon + 1, (size_t)(at - colon - 1));
        if (colon > rest) r->user = pct_decode(rest, (size_t)(colon - rest));
        if (!r->password || (colon > rest && !r->user)) {
            ts_err_set(err, "invalid Redis URL: bad %%-escape in the credentials");
            return false;
        }
        hp = at + 1;
    }
    size_t hplen = (size_t)(rest + alen - hp);
    const char *hend = hp + hplen, *port = NULL;
    if (hplen > 0 && hp[0] == '[') { /* [IPv6]:port */
        const char *close = memchr(hp, ']', hplen);
        if (!close) {
            ts_err_set(err, "invalid Redis URL: missing ']' after IPv6 address");
            return false;
        }
        r->host = ts_strndup(hp + 1, (size_t)(close - hp - 1));
        if (close + 1 < hend && close[1] != ':') {
            ts_err_set(err, "invalid Redis URL: unexpected text after IPv6 address");
            return false;
        }
        if (close + 1 < hend) port = close + 2;
    } else {
        const char *colon = memchr(hp, ':', hplen);
        r->host = ts_strndup(hp, colon ? (size_t)(colon - hp) : hplen);
        if (colon) port = colon + 1;
    }
    if (!r->host[0]) {
        ts_err_set(err, "invalid Redis URL: missing host");
        return false;
    }
    r->port = 6379;
    if (port) {
        long v;
        if (!parse_uint(port, (size_t)(hend - port), 65535, &v) || v == 0) {
            ts_err_set(err, "invalid Redis URL: port must be a number from 1 to 65535");
            return false;
        }
        r->port = (int)v;
    }
    if (slash && slash[1]) {
        long db;
        if (!parse_uint(slash + 1, strlen(slash + 1), MAX_DB, &db)) {
            ts_err_set(err, "invalid Redis URL: database after '/' must be a number");
            return false;
        }
        r->db = (int)db;
    }
    return true;
}

static bool parse_url(rds *r, const char *url, ts_err *err)
{
    if (!url || !*url) {
        ts_err_set(err, "invalid Redis URL: empty");
        return false;
    }
    if (strncmp(url, "redis://", 8) == 0) return parse_tcp(r, url + 8, err);
    if (strncmp(url, "unix://", 7) == 0) return parse_unix(r, url + 7, err);
    ts_err_set(err, "invalid Redis URL: must start with redis:// or unix://");
    return false;
}

/* ---- connection ------------------------------------------------------------------------- */

static void describe(const rds *r, char *buf, size_t size)
{
    if (r->host)
        snprintf(buf, size, "%s:%d", r->host, r->port);
    else
        snprintf(buf, size, "%s", r->path);
}

/* One setup command on a fresh context; false unless the reply is OK. */
static bool setup_command(rds *r, int argc, const char **argv, ts_err *err)
{
    redisReply *rep = redisCommandArgv(r->c, argc, argv, NULL);
    if (!rep) {
        ts_err_set(err, "%s: %s", argv[0], r->c->errstr);
        return false;
    }
    bool ok = rep->type == REDIS_REPLY_STATUS;
    if (!ok)
        ts_err_set(err, "%s: %s", argv[0],
                   rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
    freeReplyObject(rep);
    return ok;
}

static void drop(rds *r)
{
    if (r->c) redisFree(r->c);
    r->c = NULL;
}

static bool open_context(rds *r, ts_err *err)
{
    drop(r);
    struct timeval tv = {r->timeout_ms / 1000, (r->timeout_ms % 1000) * 1000};
    r->c = r->host ? redisConnectWithTimeout(r->host, r->port, tv)
                   : redisConnectUnixWithTimeout(r->path, tv);
    char where[300];
    describe(r, where, sizeof(where));
    if (!r->c || r->c->err) {
        ts_err_set(err, "cannot connect to Redis at %s: %s", where,
                   r->c ? r->c->errstr : "out of memory");
        deps_failed(DEP_REDIS, err ? err->msg : "cannot connect");
        drop(r);
        return false;
    }
    if (redisSetTimeout(r->c, tv) != REDIS_OK) {
        ts_err_set(err, "cannot set Redis timeout on %s: %s", where, r->c->errstr);
        drop(r);
        return false;
    }
    if (r->host) (void)redisEnableKeepAlive(r->c);
    bool ok = true;
    if (r->password) {
        const char *argv[3] = {"AUTH", r->user ? r->user : r->password, r->password};
        ok = setup_command(r, r->user ? 3 : 2, argv, err);
    }
    if (ok && r->db) {
        char db[16];
        snprintf(db, sizeof(db), "%d", r->db);
        const char *argv[2] = {"SELECT", db};
        ok = setup_command(r, 2, argv, err);
    }
    if (!ok) {
        ts_err_prefix(err, "Redis at %s", where);
        drop(r);
    } else {
        deps_answered(DEP_REDIS);
    }
    return ok;
}

rds *rds_connect(const char *url, int timeout_ms, ts_err *err)
{
    rds *r = ts_calloc(1, sizeof(*r));
    r->timeout_ms = timeout_ms > 0 ? timeout_ms : 1000;
    if (!parse_url(r, url, err) || !open_context(r, err)) {
        rds_free(r);
        return NULL;
    }
    return r;
}

void rds_free(rds *r)
{
    if (!r) return;
    drop(r);
    free(r->host);
    free(r->path);
    free(r->user);
    free(r->password);
    free(r);
}

/* ---- commands ---------------------------------------------------------------------------- */

redisReply *rds_command(rds *r, int argc, const char **argv, const size_t *argvlen, ts_err *err)
{
    if (!r || argc <= 0 || !argv) {
        ts_err_set(err, "redis: invalid command");
        return NULL;
    }
    char where[300];
    describe(r, where, sizeof(where));
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!r->c && !open_context(r, err)) return NULL;
        errno = 0;
        redisReply *rep = redisCommandArgv(r->c, argc, argv, argvlen);
        if (rep) {
            deps_answered(DEP_REDIS);
            return rep;
        }
        int code = r->c->err, saved = errno;
        char why[128];
        ts_strlcpy(why, r->c->errstr, sizeof(why));
        drop(r); /* a context that failed is unusable */
        if (code == REDIS_ERR_IO && (saved == EAGAIN || saved == EWOULDBLOCK)) {
            ts_err_set(err, "Redis %s at %s: timed out after %d ms", argv[0], where, r->timeout_ms);
            deps_failed(DEP_REDIS, err ? err->msg : "timed out");
            return NULL;
        }
        if ((code != REDIS_ERR_IO && code != REDIS_ERR_EOF) || attempt == 1) {
            ts_err_set(err, "Redis %s at %s: %s", argv[0], where, why);
            deps_failed(DEP_REDIS, why);
            return NULL;
        }
        TLOG_WARN("redis connection lost, reconnecting", "addr=%s error=\"%s\"", where, why);
    }
    return NULL;
}

bool rds_ping(rds *r, ts_err *err)
{
    const char *argv[1] = {"PING"};
    redisReply *rep = rds_command(r, 1, argv, NULL, err);
    if (!rep) return false;
    bool ok = rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "PONG") == 0;
    if (!ok)
        ts_err_set(err, "Redis PING: %s",
                   rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
    freeReplyObject(rep);
    return ok;
}

bool rds_script_load(rds *r, rds_script *s, ts_err *err)
{
    if (!s || !s->source) {
        ts_err_set(err, "Redis SCRIPT LOAD: no script");
        return false;
    }
    const char *argv[3] = {"SCRIPT", "LOAD", s->source};
    redisReply *rep = rds_command(r, 3, argv, NULL, err);
    if (!rep) return false;
    bool ok = rep->type == REDIS_REPLY_STRING && rep->len == 40;
    if (ok)
        memcpy(s->sha, rep->str, 41);
    else
        ts_err_set(err, "Redis SCRIPT LOAD: %s",
                   rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
    freeReplyObject(rep);
    return ok;
}

redisReply *rds_eval(rds *r, rds_script *s, int numkeys, int argc, const char **argv,
                     const size_t *argvlen, ts_err *err)
{
    if (!s || numkeys < 0 || argc < 0 || numkeys > argc || (argc && !argv)) {
        ts_err_set(err, "Redis EVALSHA: invalid arguments");
        return NULL;
    }
    if (!s->sha[0] && !rds_script_load(r, s, err)) return NULL;
    char nk[16];
    snprintf(nk, sizeof(nk), "%d", numkeys);
    size_t n = (size_t)argc + 3;
    const char **av = ts_calloc(n, sizeof(*av));
    size_t *al = ts_calloc(n, sizeof(*al));
    av[0] = "EVALSHA";
    av[1] = s->sha;
    av[2] = nk;
    for (int i = 0; i < argc; i++) {
        av[i + 3] = argv[i];
        al[i + 3] = argvlen ? argvlen[i] : strlen(argv[i]);
    }
    redisReply *rep = NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        al[0] = 7;
        al[1] = strlen(s->sha);
        al[2] = strlen(nk);
        rep = rds_command(r, (int)n, av, al, err);
        if (!rep || rep->type != REDIS_REPLY_ERROR || strncmp(rep->str, "NOSCRIPT", 8) != 0 ||
            attempt == 1)
            break;
        /* The server lost the script (restart, SCRIPT FLUSH): load it again. */
        freeReplyObject(rep);
        rep = NULL;
        TLOG_INFO("redis script missing, loading again", "sha=%s", s->sha);
        if (!rds_script_load(r, s, err)) break;
    }
    free(av);
    free(al);
    return rep;
}

/* ---- argument lists ------------------------------------------------------ */

void rds_args_push(rds_args *a, const char *s)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 64;
        a->v = ts_realloc(a->v, sizeof(*a->v) * a->cap);
    }
    a->v[a->n++] = s;
}

void rds_args_own(rds_args *a, char *s)
{
    if (a->nowned == a->capowned) {
        a->capowned = a->capowned ? a->capowned * 2 : 64;
        a->owned = ts_realloc(a->owned, sizeof(*a->owned) * a->capowned);
    }
    a->owned[a->nowned++] = s;
    rds_args_push(a, s);
}

void rds_args_free(rds_args *a)
{
    for (size_t i = 0; i < a->nowned; i++)
        free(a->owned[i]);
    free(a->owned);
    free(a->v);
}

redisReply *rds_eval_args(rds *r, rds_script *s, const rds_args *a, ts_err *err)
{
    redisReply *rep = rds_eval(r, s, 0, (int)a->n, a->v, NULL, err);
    if (rep && rep->type == REDIS_REPLY_ERROR) {
        ts_err_set(err, "Redis script: %s", rep->str);
        freeReplyObject(rep);
        return NULL;
    }
    return rep;
}
