/* context_cache.h: tessera-auth's session contexts (GET /v1/session-context),
 * remembered so that a burst of calls by one keypair costs one round trip.
 *
 * Key: access key + group (no group is a key of its own). Only successful
 * (200) contexts are put; an entry lives ttl_ms (the backstop for changes no
 * event announces), and is dropped earlier by key, by user or all at once
 * (auth_events.c, on tessera.auth.v1). At most max_entries: a put into a full
 * cache evicts the least recently used entry.
 *
 * A fetch that raced an invalidation must not be kept: ctx_cache_get answers
 * the cache's generation with its miss, every drop advances it, and
 * ctx_cache_put stores only when it did not move since.
 *
 * Thread-safe: one mutex, held to look up, copy in or copy out (never across
 * a fetch). Contexts go in and come out as deep copies: callers own theirs. */
#ifndef REGISTRY_CONTEXT_CACHE_H
#define REGISTRY_CONTEXT_CACHE_H

#include "libcommon/common.h"

#include <jansson.h>

/* Longer keys are never cached (auth refuses them anyway). */
#define CTX_CACHE_KEY_MAX 64
#define CTX_CACHE_GROUP_MAX 256

typedef struct ctx_cache ctx_cache;

/* max_entries >= 1; ttl_ms > 0. */
ctx_cache *ctx_cache_new(size_t max_entries, int64_t ttl_ms);
void ctx_cache_free(ctx_cache *c);

/* A copy of the context of (access_key, group) (group may be NULL), or NULL on
 * a miss (absent or expired at now_ms). *gen: the generation to hand to
 * ctx_cache_put after fetching. */
json_t *ctx_cache_get(ctx_cache *c, const char *access_key, const char *group, int64_t now_ms,
                      uint64_t *gen);
/* Keep a copy of ctx (a JSON object) until now_ms + ttl, unless an
 * invalidation happened since the miss that answered gen. */
void ctx_cache_put(ctx_cache *c, const char *access_key, const char *group, json_t *ctx,
                   uint64_t gen, int64_t now_ms);

/* Drop every entry of that access key (all its groups). */
void ctx_cache_drop_key(ctx_cache *c, const char *access_key);
/* Drop every entry whose context's user.id is user_id. */
void ctx_cache_drop_user(ctx_cache *c, const char *user_id);
void ctx_cache_drop_all(ctx_cache *c);

typedef struct ctx_cache_stats {
    uint64_t hits, misses, expired, stored, stale_puts, evicted, dropped;
    uint64_t entries;
} ctx_cache_stats;
void ctx_cache_get_stats(ctx_cache *c, ctx_cache_stats *out);

#endif
