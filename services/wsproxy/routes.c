/* routes.c: route records in Redis and their per-thread cache (routes.h). */
#include "services/wsproxy/routes.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const k_proto[] = {"http", "tcp", "preopen"};

const char *route_proto_name(route_proto p)
{
    return (unsigned)p < TS_ARRAY_LEN(k_proto) ? k_proto[p] : "http";
}

bool route_proto_parse(const char *s, route_proto *out)
{
    for (size_t i = 0; i < TS_ARRAY_LEN(k_proto); i++)
        if (s && strcmp(s, k_proto[i]) == 0) {
            *out = (route_proto)i;
            return true;
        }
    return false;
}

static bool chars_ok(const char *s, const char *extra)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > ROUTE_ID_MAX) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              strchr(extra, c)))
            return false;
    }
    return true;
}

bool route_id_ok(const char *s)
{
    return chars_ok(s, "._:-");
}

bool route_app_ok(const char *s)
{
    return chars_ok(s, "._-");
}

bool route_target_parse(const char *target, char host[ROUTE_HOST_MAX + 1], int *port, ts_err *err)
{
    if (!target || !*target) {
        ts_err_set(err, "target: expected host:port");
        return false;
    }
    const char *colon;
    const char *hs = target, *he;
    if (target[0] == '[') {
        const char *rb = strchr(target, ']');
        if (!rb || rb[1] != ':') {
            ts_err_set(err, "target: expected [ipv6]:port");
            return false;
        }
        hs = target + 1;
        he = rb;
        colon = rb + 1;
    } else {
        colon = strrchr(target, ':');
        if (!colon || memchr(target, ':', (size_t)(colon - target))) {
            ts_err_set(err, "target: expected host:port (IPv6 in brackets)");
            return false;
        }
        he = colon;
    }
    size_t hl = (size_t)(he - hs);
    if (hl == 0 || hl > ROUTE_HOST_MAX) {
        ts_err_set(err, "target: bad host");
        return false;
    }
    for (size_t i = 0; i < hl; i++) {
        char c = hs[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || (target[0] == '[' && c == ':'))) {
            ts_err_set(err, "target: bad character in host");
            return false;
        }
    }
    char *end = NULL;
    long p = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || p < 1 || p > 65535) {
        ts_err_set(err, "target: port must be 1..65535");
        return false;
    }
    memcpy(host, hs, hl);
    host[hl] = '\0';
    *port = (int)p;
    return true;
}

char *route_to_json(const route *r)
{
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:I, s:s}", "user_id", r->user_id, "session_id",
                  r->session_id, "app", r->app, "protocol", route_proto_name(r->proto), "host",
                  r->host, "port", r->port, "expires_at", (json_int_t)r->expires_at_ms, "kind",
                  r->is_cookie ? "cookie" : "token");
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

static bool copy_field(json_t *o, const char *name, char *dst, size_t cap, ts_err *err)
{
    const char *v = json_string_value(json_object_get(o, name));
    if (!v || strlen(v) >= cap) {
        ts_err_set(err, "route record: bad %s", name);
        return false;
    }
    strcpy(dst, v);
    return true;
}

bool route_from_json(const char *s, size_t n, route *r, ts_err *err)
{
    json_error_t je;
    json_t *o = json_loadb(s, n, 0, &je);
    if (!json_is_object(o)) {
        json_decref(o);
        ts_err_set(err, "route record: not a JSON object");
        return false;
    }
    memset(r, 0, sizeof(*r));
    bool ok = copy_field(o, "user_id", r->user_id, sizeof(r->user_id), err) &&
              copy_field(o, "session_id", r->session_id, sizeof(r->session_id), err) &&
              copy_field(o, "app", r->app, sizeof(r->app), err) &&
              copy_field(o, "host", r->host, sizeof(r->host), err);
    if (ok && !route_proto_parse(json_string_value(json_object_get(o, "protocol")), &r->proto)) {
        ts_err_set(err, "route record: bad protocol");
        ok = false;
    }
    json_int_t port = json_integer_value(json_object_get(o, "port"));
    if (ok && (port < 1 || port > 65535)) {
        ts_err_set(err, "route record: bad port");
        ok = false;
    }
    r->port = (int)port;
    r->expires_at_ms = json_integer_value(json_object_get(o, "expires_at"));
    const char *kind = json_string_value(json_object_get(o, "kind"));
    r->is_cookie = kind && strcmp(kind, "cookie") == 0;
    json_decref(o);
    if (ok) tok_app_hash(r->user_id, r->session_id, r->app, r->hash);
    return ok;
}

/* ---- Redis -------------------------------------------------------------- */

/* KEYS[1] route key, KEYS[2] session set; ARGV: record, ttl ms, set ttl ms, member,
 * require_set, journal. Returns 1, or 0 when require_set and the set is gone.
 * journal: the route also goes to the journal stream (and the epoch key is
 * made when missing), from which tessera-registry keeps its copy. */
static rds_script k_put = {
    .source = "if ARGV[5] == '1' and redis.call('EXISTS', KEYS[2]) == 0 then return 0 end\n"
              "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
              "redis.call('SADD', KEYS[2], ARGV[4])\n"
              "if ARGV[6] == '1' then\n"
              "  if redis.call('EXISTS', '" ROUTES_EPOCH "') == 0 then\n"
              "    local t = redis.call('TIME')\n"
              "    redis.call('SET', '" ROUTES_EPOCH "', t[1] .. '.' .. t[2])\n"
              "  end\n"
              "  redis.call('XADD', '" ROUTES_JOURNAL "', 'MAXLEN', '~', '100000', '*',"
              " 'key', ARGV[4], 'route', ARGV[1])\n"
              "end\n"
              "local t = redis.call('PTTL', KEYS[2])\n"
              "if t < tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[2], ARGV[3]) end\n"
              "return 1\n",
};

/* KEYS[1] session set; ARGV[1] session id. Deletes route:<member> for each
 * member and the set, publishes the id, returns how many members. */
static rds_script k_revoke = {
    .source = "local m = redis.call('SMEMBERS', KEYS[1])\n"
              "for _, t in ipairs(m) do redis.call('DEL', 'route:' .. t) end\n"
              "redis.call('DEL', KEYS[1])\n"
              "redis.call('PUBLISH', '" ROUTES_REVOKE_CHANNEL "', ARGV[1])\n"
              "redis.call('XADD', '" ROUTES_REVOKE_STREAM
              "', 'MAXLEN', '~', '10000', '*', 'session', ARGV[1])\n"
              "return #m\n",
};

static bool ensure_loaded(rds *rd, rds_script *s, ts_err *err)
{
    /* rds_eval falls back to loading on NOSCRIPT; load once up front. */
    if (s->sha[0]) return true;
    return rds_script_load(rd, s, err);
}

static bool put(rds *rd, const route *r, const char *key, int64_t ttl_ms, int64_t set_ttl_ms,
                bool require_set, bool journal, bool *ok, ts_err *err)
{
    if (!ensure_loaded(rd, &k_put, err)) return false;
    char rkey[64], skey[128], ttl[24], sttl[24];
    snprintf(rkey, sizeof(rkey), "route:%s", key);
    snprintf(skey, sizeof(skey), "session:%s:routes", r->session_id);
    snprintf(ttl, sizeof(ttl), "%lld", (long long)ttl_ms);
    snprintf(sttl, sizeof(sttl), "%lld", (long long)(set_ttl_ms > ttl_ms ? set_ttl_ms : ttl_ms));
    char *json = route_to_json(r);
    const char *argv[] = {
        rkey, skey, json, ttl, sttl, key, require_set ? "1" : "0", journal ? "1" : "0"};
    redisReply *rep = rds_eval(rd, &k_put, 2, 8, argv, NULL, err);
    free(json);
    if (!rep) return false;
    bool good = rep->type == REDIS_REPLY_INTEGER;
    if (!good)
        ts_err_set(err, "redis: %s", rep->type == REDIS_REPLY_ERROR ? rep->str : "bad reply");
    else
        *ok = rep->integer == 1;
    freeReplyObject(rep);
    return good;
}

bool routes_create(rds *rd, route *r, int64_t ttl_ms, int64_t set_ttl_ms, char token[TOK_LEN + 1],
                   ts_err *err)
{
    ts_token_new(token);
    r->expires_at_ms = ts_now_wall_ms() + ttl_ms;
    r->is_cookie = false;
    tok_app_hash(r->user_id, r->session_id, r->app, r->hash);
    bool ok = false;
    return put(rd, r, token, ttl_ms, set_ttl_ms, false, true, &ok, err);
}

bool routes_mint_cookie(rds *rd, const route *r, int64_t ttl_ms, char cookie[TOK_LEN + 1], bool *ok,
                        ts_err *err)
{
    route c = *r;
    c.is_cookie = true;
    c.expires_at_ms = ts_now_wall_ms() + ttl_ms;
    ts_token_new(cookie);
    return put(rd, &c, cookie, ttl_ms, ttl_ms, true, true, ok, err);
}

bool routes_restore(rds *rd, const route *r, const char *key, int64_t now_ms, bool *stored,
                    ts_err *err)
{
    *stored = false;
    int64_t ttl = r->expires_at_ms - now_ms;
    if (ttl <= 0) return true;
    bool ok = false;
    if (!put(rd, r, key, ttl, ttl, false, false, &ok, err)) return false;
    *stored = ok;
    return true;
}

bool routes_epoch(rds *rd, char epoch[64], ts_err *err)
{
    const char *argv[] = {"GET", ROUTES_EPOCH};
    redisReply *rep = rds_command(rd, 2, argv, NULL, err);
    if (!rep) return false;
    epoch[0] = '\0';
    bool good = rep->type == REDIS_REPLY_STRING || rep->type == REDIS_REPLY_NIL;
    if (rep->type == REDIS_REPLY_STRING) ts_strlcpy(epoch, rep->str, 64);
    if (!good)
        ts_err_set(err, "redis GET: %s", rep->type == REDIS_REPLY_ERROR ? rep->str : "bad reply");
    freeReplyObject(rep);
    return good;
}

bool routes_epoch_renew(rds *rd, char epoch[64], ts_err *err)
{
    char v[64];
    snprintf(v, sizeof(v), "%lld.r", (long long)ts_now_wall_ms());
    const char *argv[] = {"SET", ROUTES_EPOCH, v, "NX"};
    redisReply *rep = rds_command(rd, 4, argv, NULL, err);
    if (!rep) return false;
    bool good = rep->type != REDIS_REPLY_ERROR;
    if (!good) ts_err_set(err, "redis SET: %s", rep->str);
    freeReplyObject(rep);
    return good && routes_epoch(rd, epoch, err);
}

bool routes_lookup(rds *rd, const char *key, route *out, bool *found, ts_err *err)
{
    char rkey[64];
    snprintf(rkey, sizeof(rkey), "route:%s", key);
    const char *argv[] = {"GET", rkey};
    redisReply *rep = rds_command(rd, 2, argv, NULL, err);
    if (!rep) return false;
    *found = false;
    bool good = true;
    if (rep->type == REDIS_REPLY_STRING) {
        ts_err perr;
        if (route_from_json(rep->str, rep->len, out, &perr))
            *found = out->expires_at_ms > ts_now_wall_ms();
    } else if (rep->type != REDIS_REPLY_NIL) {
        ts_err_set(err, "redis GET: %s", rep->type == REDIS_REPLY_ERROR ? rep->str : "bad reply");
        good = false;
    }
    freeReplyObject(rep);
    return good;
}

bool routes_revoke_session(rds *rd, const char *session_id, long *removed, ts_err *err)
{
    if (!ensure_loaded(rd, &k_revoke, err)) return false;
    char skey[128];
    snprintf(skey, sizeof(skey), "session:%s:routes", session_id);
    const char *argv[] = {skey, session_id};
    redisReply *rep = rds_eval(rd, &k_revoke, 1, 2, argv, NULL, err);
    if (!rep) return false;
    bool good = rep->type == REDIS_REPLY_INTEGER;
    if (good)
        *removed = (long)rep->integer;
    else
        ts_err_set(err, "redis: %s", rep->type == REDIS_REPLY_ERROR ? rep->str : "bad reply");
    freeReplyObject(rep);
    return good;
}

bool routes_revocations_tail(rds *rd, char last_id[64], ts_err *err)
{
    const char *argv[] = {"XREVRANGE", ROUTES_REVOKE_STREAM, "+", "-", "COUNT", "1"};
    redisReply *rep = rds_command(rd, 6, argv, NULL, err);
    if (!rep) return false;
    strcpy(last_id, "0-0");
    bool good = rep->type == REDIS_REPLY_ARRAY;
    if (good && rep->elements == 1 && rep->element[0]->type == REDIS_REPLY_ARRAY &&
        rep->element[0]->elements >= 1 && rep->element[0]->element[0]->type == REDIS_REPLY_STRING)
        ts_strlcpy(last_id, rep->element[0]->element[0]->str, 64);
    if (!good)
        ts_err_set(err, "redis XREVRANGE: %s",
                   rep->type == REDIS_REPLY_ERROR ? rep->str : "bad reply");
    freeReplyObject(rep);
    return good;
}

bool routes_revocations_wait(rds *rd, char last_id[64], int block_ms, char (*out)[ROUTE_ID_MAX + 1],
                             int max, int *count, ts_err *err)
{
    char blk[16];
    snprintf(blk, sizeof(blk), "%d", block_ms);
    const char *argv[] = {"XREAD", "COUNT", "256", "BLOCK", blk, "STREAMS", ROUTES_REVOKE_STREAM,
                          last_id};
    *count = 0;
    redisReply *rep = rds_command(rd, 8, argv, NULL, err);
    if (!rep) return false;
    int n = 0;
    bool ok = rep->type != REDIS_REPLY_ERROR;
    if (!ok) {
        ts_err_set(err, "redis XREAD: %s", rep->str);
    } else if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 1) {
        redisReply *stream = rep->element[0];
        redisReply *entries =
            stream->type == REDIS_REPLY_ARRAY && stream->elements == 2 ? stream->element[1] : NULL;
        for (size_t i = 0; entries && entries->type == REDIS_REPLY_ARRAY && i < entries->elements;
             i++) {
            redisReply *e = entries->element[i];
            if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
                e->element[0]->type != REDIS_REPLY_STRING)
                continue;
            ts_strlcpy(last_id, e->element[0]->str, 64);
            redisReply *f = e->element[1];
            for (size_t k = 0; f->type == REDIS_REPLY_ARRAY && k + 1 < f->elements; k += 2)
                if (f->element[k]->type == REDIS_REPLY_STRING &&
                    strcmp(f->element[k]->str, "session") == 0 &&
                    f->element[k + 1]->type == REDIS_REPLY_STRING && n < max)
                    ts_strlcpy(out[n++], f->element[k + 1]->str, ROUTE_ID_MAX + 1);
        }
    }
    freeReplyObject(rep);
    *count = n;
    return ok;
}

bool routes_session_alive(rds *rd, const char *session_id, bool *alive, ts_err *err)
{
    char skey[128];
    snprintf(skey, sizeof(skey), "session:%s:routes", session_id);
    const char *argv[] = {"EXISTS", skey};
    redisReply *rep = rds_command(rd, 2, argv, NULL, err);
    if (!rep) return false;
    bool good = rep->type == REDIS_REPLY_INTEGER;
    if (good)
        *alive = rep->integer > 0;
    else
        ts_err_set(err, "redis EXISTS: bad reply");
    freeReplyObject(rep);
    return good;
}

bool routes_touch(rds *rd, const char *session_id, int64_t now_ms, int64_t set_ttl_ms, ts_err *err)
{
    char lkey[128], skey[128], now[24], ttl[24];
    snprintf(lkey, sizeof(lkey), "session:%s:last_access", session_id);
    snprintf(skey, sizeof(skey), "session:%s:routes", session_id);
    snprintf(now, sizeof(now), "%lld", (long long)now_ms);
    snprintf(ttl, sizeof(ttl), "%lld", (long long)set_ttl_ms);
    const char *a1[] = {"SET", lkey, now, "EX", ROUTES_LAST_ACCESS_TTL_S};
    redisReply *rep = rds_command(rd, 5, a1, NULL, err);
    if (!rep) return false;
    freeReplyObject(rep);
    /* PEXPIRE on a missing key does nothing: a revoked session stays revoked. */
    const char *a2[] = {"PEXPIRE", skey, ttl};
    rep = rds_command(rd, 3, a2, NULL, err);
    if (!rep) return false;
    freeReplyObject(rep);
    return true;
}

/* ---- cache -------------------------------------------------------------- */

enum { SLOT_EMPTY = 0, SLOT_ROUTE, SLOT_ABSENT, SLOT_SESSION };

typedef struct cache_slot {
    int kind;
    bool alive; /* SLOT_SESSION */
    int64_t at_ms;
    char key[ROUTE_ID_MAX + 4]; /* token/cookie (43) or "s:" + session id */
    route r;
} cache_slot;

struct route_cache {
    cache_slot *slots;
    size_t n;
    int64_t ttl_ms;
};

route_cache *route_cache_new(size_t slots, int64_t ttl_ms)
{
    route_cache *c = ts_calloc(1, sizeof(*c));
    c->n = slots ? slots : 1;
    c->slots = ts_calloc(c->n, sizeof(cache_slot));
    c->ttl_ms = ttl_ms;
    return c;
}

void route_cache_free(route_cache *c)
{
    if (!c) return;
    free(c->slots);
    free(c);
}

static size_t slot_of(const route_cache *c, const char *key)
{
    return (size_t)(ts_fnv1a(TS_FNV_OFFSET, key, strlen(key)) % c->n);
}

bool route_cache_get(route_cache *c, const char *key, int64_t now_ms, route *out, bool *found)
{
    cache_slot *s = &c->slots[slot_of(c, key)];
    if ((s->kind != SLOT_ROUTE && s->kind != SLOT_ABSENT) || strcmp(s->key, key) != 0) return false;
    if (now_ms - s->at_ms >= c->ttl_ms) return false;
    *found = s->kind == SLOT_ROUTE && s->r.expires_at_ms > ts_now_wall_ms();
    if (*found) *out = s->r;
    return true;
}

void route_cache_put(route_cache *c, const char *key, const route *r, int64_t now_ms)
{
    if (strlen(key) > ROUTE_ID_MAX) return;
    cache_slot *s = &c->slots[slot_of(c, key)];
    s->kind = r ? SLOT_ROUTE : SLOT_ABSENT;
    s->at_ms = now_ms;
    strcpy(s->key, key);
    if (r) s->r = *r;
}

static void session_key(char *out, size_t cap, const char *sid)
{
    snprintf(out, cap, "s:%s", sid);
}

bool route_cache_session(route_cache *c, const char *session_id, int64_t now_ms, bool *alive)
{
    char k[ROUTE_ID_MAX + 8];
    session_key(k, sizeof(k), session_id);
    cache_slot *s = &c->slots[slot_of(c, k)];
    if (s->kind != SLOT_SESSION || strcmp(s->key, k) != 0 || now_ms - s->at_ms >= c->ttl_ms)
        return false;
    *alive = s->alive;
    return true;
}

void route_cache_put_session(route_cache *c, const char *session_id, bool alive, int64_t now_ms)
{
    char k[ROUTE_ID_MAX + 8];
    session_key(k, sizeof(k), session_id);
    cache_slot *s = &c->slots[slot_of(c, k)];
    s->kind = SLOT_SESSION;
    s->alive = alive;
    s->at_ms = now_ms;
    strcpy(s->key, k);
}

void route_cache_drop_session(route_cache *c, const char *session_id)
{
    for (size_t i = 0; i < c->n; i++) {
        cache_slot *s = &c->slots[i];
        if (s->kind == SLOT_ROUTE && strcmp(s->r.session_id, session_id) == 0) s->kind = SLOT_EMPTY;
    }
    route_cache_put_session(c, session_id, false, ts_now_mono_ms());
}
