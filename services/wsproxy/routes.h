/* routes.h: app routes in Redis, and a short-lived per-thread cache of them.
 *
 * Keys (docs/wsproxy.md):
 *   route:<token>               JSON route record, TTL wsproxy.token_ttl (a token
 *                               from POST /v1/routes) or wsproxy.cookie_ttl (a
 *                               cookie minted when a token was used)
 *   session:<id>:routes         SET of the session's tokens and cookies; its TTL
 *                               slides with use; deleting the session's routes
 *                               deletes it, and a session without it is closed
 *   session:<id>:last_access    last proxied use, Unix milliseconds
 *   wsproxy:routes:journal      stream: every route and cookie stored, fields key
 *                               (the token or cookie) and route (the record), MAXLEN
 *                               ~100000; tessera-registry reads it into PostgreSQL
 *   wsproxy:routes:epoch        made with the first route after Redis was empty (and
 *                               by a restore): when it is gone or another, Redis
 *                               lost the routes and the registry restores them
 *                               (POST /v1/routes/restore)
 * Revocation: the script that deletes a session's routes also publishes the
 * session id on the channel wsproxy:revoke and appends it to the stream
 * wsproxy:revocations (field "session"), which every wsproxy follows with
 * XREAD BLOCK: unlike pub/sub, nothing is lost while it reconnects. */
#ifndef WSPROXY_ROUTES_H
#define WSPROXY_ROUTES_H

#include "libcommon/common.h"
#include "libcommon/rds.h"
#include "services/wsproxy/tokens.h"

#define ROUTE_ID_MAX 64
#define ROUTE_HOST_MAX 255
#define ROUTES_REVOKE_CHANNEL "wsproxy:revoke"
#define ROUTES_REVOKE_STREAM "wsproxy:revocations"
#define ROUTES_JOURNAL "wsproxy:routes:journal"
#define ROUTES_EPOCH "wsproxy:routes:epoch"

typedef enum route_proto { ROUTE_HTTP = 0, ROUTE_TCP, ROUTE_PREOPEN } route_proto;

typedef struct route {
    char user_id[ROUTE_ID_MAX + 1];
    char session_id[ROUTE_ID_MAX + 1];
    char app[ROUTE_ID_MAX + 1];
    route_proto proto;
    char host[ROUTE_HOST_MAX + 1]; /* the kernel's host address on its agent */
    int port;
    int64_t expires_at_ms; /* of this token or cookie */
    bool is_cookie;
    char hash[TOK_HASH_LEN + 1]; /* tok_app_hash(user, session, app) */
} route;

const char *route_proto_name(route_proto p);
bool route_proto_parse(const char *s, route_proto *out) TS_MUST_CHECK;

/* Field checks for the internal API: ids [A-Za-z0-9._:-]{1,64}, app
 * [A-Za-z0-9._-]{1,64}, target "host:port" (host a name, IPv4, or [IPv6]). */
bool route_id_ok(const char *s) TS_MUST_CHECK;
bool route_app_ok(const char *s) TS_MUST_CHECK;
bool route_target_parse(const char *target, char host[ROUTE_HOST_MAX + 1], int *port,
                        ts_err *err) TS_MUST_CHECK;

/* JSON for Redis; the result is heap-allocated. */
char *route_to_json(const route *r);
bool route_from_json(const char *s, size_t n, route *r, ts_err *err) TS_MUST_CHECK;

/* Store a new token for r (r->expires_at_ms set from ttl_ms); the session's
 * set gets the token and a TTL of at least set_ttl_ms. */
bool routes_create(rds *rd, route *r, int64_t ttl_ms, int64_t set_ttl_ms, char token[TOK_LEN + 1],
                   ts_err *err) TS_MUST_CHECK;
/* A cookie for the route r came from: only while the session still has its
 * set (a revocation in between wins). *ok false: the session's routes are gone. */
bool routes_mint_cookie(rds *rd, const route *r, int64_t ttl_ms, char cookie[TOK_LEN + 1], bool *ok,
                        ts_err *err) TS_MUST_CHECK;
/* Store a route again under its key (token or cookie) as it was (restore after
 * Redis lost it): until r->expires_at_ms, the session's set with it; not
 * journaled. *stored false when it had already expired. */
bool routes_restore(rds *rd, const route *r, const char *key, int64_t now_ms, bool *stored,
                    ts_err *err) TS_MUST_CHECK;
/* The epoch value ("" when none). */
bool routes_epoch(rds *rd, char epoch[64], ts_err *err) TS_MUST_CHECK;
/* Make the epoch when missing; then its value. */
bool routes_epoch_renew(rds *rd, char epoch[64], ts_err *err) TS_MUST_CHECK;
/* Look a token or cookie up: *found false when unknown or expired. */
bool routes_lookup(rds *rd, const char *key, route *out, bool *found, ts_err *err) TS_MUST_CHECK;
/* Delete every route of a session and publish the revocation; *removed: how
 * many tokens and cookies went. */
bool routes_revoke_session(rds *rd, const char *session_id, long *removed,
                           ts_err *err) TS_MUST_CHECK;
/* The newest entry id of the revocation stream ("0-0" when empty). */
bool routes_revocations_tail(rds *rd, char last_id[64], ts_err *err) TS_MUST_CHECK;
/* Wait up to block_ms for revocations after last_id (advanced); fills out with
 * up to max session ids, *count of them. */
bool routes_revocations_wait(rds *rd, char last_id[64], int block_ms, char (*out)[ROUTE_ID_MAX + 1],
                             int max, int *count, ts_err *err) TS_MUST_CHECK;
/* Whether the session still has its routes set. */
bool routes_session_alive(rds *rd, const char *session_id, bool *alive, ts_err *err) TS_MUST_CHECK;
/* How long last_access is kept: the idle checker (the registry's
 * idle_network.h) reads it up to an idle_timeout after the use. */
#define ROUTES_LAST_ACCESS_TTL_S "2592000"
/* Record use: last_access = now_ms (kept 30 days) and slide the set's TTL. */
bool routes_touch(rds *rd, const char *session_id, int64_t now_ms, int64_t set_ttl_ms,
                  ts_err *err) TS_MUST_CHECK;

/* ---- per-thread cache ---------------------------------------------------
 * Direct-mapped: a colliding key evicts. Positive and negative lookups of a
 * key and session liveness are kept for at most ttl_ms (<= 1 s), so a
 * revocation that the pub/sub message missed still takes effect within that. */
typedef struct route_cache route_cache;

route_cache *route_cache_new(size_t slots, int64_t ttl_ms);
void route_cache_free(route_cache *c);
/* true when the cache knows the key: *found (out filled) or known absent;
 * false: not cached or stale. */
bool route_cache_get(route_cache *c, const char *key, int64_t now_ms, route *out,
                     bool *found) TS_MUST_CHECK;
void route_cache_put(route_cache *c, const char *key, const route *r /* NULL: absent */,
                     int64_t now_ms);
/* Session liveness: true when known (*alive), false when not cached or stale. */
bool route_cache_session(route_cache *c, const char *session_id, int64_t now_ms,
                         bool *alive) TS_MUST_CHECK;
void route_cache_put_session(route_cache *c, const char *session_id, bool alive, int64_t now_ms);
/* Forget everything about a session (revoked). */
void route_cache_drop_session(route_cache *c, const char *session_id);

#endif
