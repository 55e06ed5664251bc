/* authcache.h: what a service knows about its callers' access keys, kept so
 * that a burst of requests by one keypair costs one round trip to
 * tessera-auth. The gateway keeps credentials in one (services/gateway/
 * credentials.c), the registry and tessera-vfolder session contexts
 * (libcommon/authctx.h); libcommon/auth_events.h keeps them true to
 * tessera-auth on tessera.auth.v1 events.
 *
 * Key: an access key and an optional variant (the registry's group: every
 * variant of a key is an entry of its own, and dropping the key drops them
 * all). Value: whatever the source answers (a struct, a JSON object), owned
 * by the cache and handed out as copies (type.copy); each value names the
 * user it belongs to (type.user_of), so that a user's entries can be dropped.
 *
 * On a miss, authcache_get asks the source (opts.fetch) without holding a
 * lock and keeps the answer:
 *   FOUND      for ttl_ms;
 *   NOT_FOUND  for negative_ttl_ms (0: not kept), so a flood of one unknown
 *              key does not hammer the source;
 *   UNAVAILABLE not kept, except that with coalescing the requests that
 *              waited for that fetch, and new ones for error_ttl_ms, get
 *              its error instead of each waiting for the source's timeout.
 * Coalescing (wait_ms > 0): concurrent misses of one key wait (up to
 * wait_ms) for one fetch instead of each asking the source.
 * Bound: at most max_entries entries; a new one evicts the least recently
 * used (per shard: shards > 1 split the table, each under its own lock and
 * with its share of the bound, max_entries / shards rounded up, for less
 * contention; 1 keeps one exact LRU order). Entries being fetched are never
 * evicted.
 * Drops: by key, by user or all (auth_events.c). Every drop advances the
 * cache's generation; a fetch keeps its answer only when the generation did
 * not move while it was in flight, so an answer that raced an invalidation
 * is not kept (the caller still gets it: it is as fresh as its request).
 * may_keep (optional) vetoes keeping anything while it answers false (the
 * registry's: until the invalidation consumer has its partitions).
 *
 * Thread-safe. Keys longer than AUTHCACHE_KEY_MAX (variants longer than
 * AUTHCACHE_VARIANT_MAX) and empty keys are never kept: each get asks. */
#ifndef TESSERA_AUTHCACHE_H
#define TESSERA_AUTHCACHE_H

#include "libcommon/common.h"

#include <stdio.h>

#define AUTHCACHE_KEY_MAX 64
#define AUTHCACHE_VARIANT_MAX 256

typedef enum authcache_result {
    AUTHCACHE_FOUND,       /* *value is the caller's */
    AUTHCACHE_NOT_FOUND,   /* the source has no value for the key (or refused it) */
    AUTHCACHE_UNAVAILABLE, /* the source could not be asked: err says why */
} authcache_result;

/* Ask the source about (access_key, variant: may be NULL); arg is the
 * authcache_get's. FOUND: *value set (owned, handed to the cache). Called
 * without locks, on the thread of the get that missed. */
typedef authcache_result (*authcache_fetch_fn)(void *ctx, const char *access_key,
                                               const char *variant, void *arg, void **value,
                                               ts_err *err);

typedef struct authcache_opts {
    size_t max_entries;      /* >= 1 */
    unsigned shards;         /* 0 or 1: one lock, one exact LRU order */
    int64_t ttl_ms;          /* > 0 */
    int64_t negative_ttl_ms; /* 0: NOT_FOUND is not kept */
    int64_t wait_ms;         /* > 0: concurrent misses of one key share one fetch */
    int64_t error_ttl_ms;    /* with wait_ms: a fetch's error is answered this long */
    authcache_fetch_fn fetch;
    void *fetch_ctx;
    /* The value type: a deep copy (for a caller), its release, and the user
     * id it belongs to (NULL or "": none; user_of may be NULL). */
    void *(*copy)(const void *value);
    void (*free)(void *value);
    const char *(*user_of)(const void *value);
    /* Optional veto on keeping anything (checked as an answer is kept). */
    bool (*may_keep)(void *ctx);
    void *may_keep_ctx;
    /* Optional clock for the TTLs (tests); NULL: ts_now_mono_ms. */
    int64_t (*now_ms)(void);
} authcache_opts;

typedef struct authcache authcache;

authcache *authcache_new(const authcache_opts *o);
void authcache_free(authcache *c);

/* The value of (access_key, variant): FOUND with *value (a copy, the
 * caller's: free it with opts.free), NOT_FOUND, or UNAVAILABLE with err. */
authcache_result authcache_get(authcache *c, const char *access_key, const char *variant, void *arg,
                               void **value, ts_err *err) TS_MUST_CHECK;

/* Drop every entry of that access key (all its variants). */
void authcache_drop_key(authcache *c, const char *access_key);
/* Drop every entry whose value belongs to user_id. */
void authcache_drop_user(authcache *c, const char *user_id);
void authcache_drop_all(authcache *c);

typedef struct authcache_stats {
    uint64_t hits;          /* answered from a kept FOUND */
    uint64_t negative_hits; /* answered from a kept NOT_FOUND */
    uint64_t misses;        /* asked the source (expired entries included) */
    uint64_t expired;       /* entries found past their TTL */
    uint64_t coalesced;     /* gets that waited for another's fetch */
    uint64_t fetch_errors;  /* UNAVAILABLE answers (a wait that timed out included) */
    uint64_t stored;        /* answers kept */
    uint64_t stale;         /* answers not kept: an invalidation raced the fetch */
    uint64_t evicted;       /* least recently used entries evicted for room */
    uint64_t invalidated_key, invalidated_user, invalidated_all; /* drop calls */
    uint64_t dropped;                                            /* entries removed by drops */
    uint64_t entries;                                            /* now */
} authcache_stats;
/* c may be NULL (no cache): all zero. */
void authcache_stats_get(authcache *c, authcache_stats *out);

/* The stats as Prometheus families <prefix>_hits_total ... <prefix>_entries
 * (docs/operations.md); what names the entries in the help texts ("access
 * keys", "session contexts"). c may be NULL: zeros. */
void authcache_metrics(FILE *out, authcache *c, const char *prefix, const char *what);

#endif
