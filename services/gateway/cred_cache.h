/* cred_cache.h: what the gateway knows about access keys, so that verifying
 * a signed request costs no round trip to tessera-auth.
 *
 * access key -> {secret, user id, role, domain, key and user status,
 * rate_limit, is_admin}, filled on a miss by the fetch function (GET
 * /v1/credentials/{ak} on auth), kept for ttl_ms. An unknown key is
 * remembered for negative_ttl_ms, so a flood of one bad key cannot hammer
 * auth. Concurrent misses for the same key wait for one fetch. Entries are
 * dropped by key, by user or all at once (invalidation.c, on tessera.auth.v1
 * events); a fetch that was in flight when its entry was dropped answers its
 * waiters but is not kept.
 *
 * Thread-safe: the table is split into shards, each under its own mutex,
 * held only to copy an entry in or out (never across a fetch). */
#ifndef GATEWAY_CRED_CACHE_H
#define GATEWAY_CRED_CACHE_H

#include "libcommon/common.h"
#include "libcommon/sign.h"

#define CRED_USER_ID_MAX 64
#define CRED_ROLE_MAX 16
#define CRED_STATUS_MAX 16
#define CRED_DOMAIN_MAX 65

typedef struct cred {
    char access_key[SIGN_ACCESS_KEY_LEN + 1];
    char secret_key[SIGN_SECRET_KEY_LEN + 1];
    char user_id[CRED_USER_ID_MAX + 1];
    char role[CRED_ROLE_MAX];          /* "superadmin", "admin", "user" */
    char user_status[CRED_STATUS_MAX]; /* "active", "inactive", "deleted" */
    char domain[CRED_DOMAIN_MAX];
    bool key_active;
    bool is_admin;
    int64_t rate_limit; /* requests per minute; 0 = unlimited */
} cred;

typedef enum cred_result {
    CRED_FOUND,       /* *out filled */
    CRED_UNKNOWN,     /* auth does not know the key */
    CRED_UNAVAILABLE, /* auth could not be asked (err says why) */
} cred_result;

/* Ask the source of truth about one key: CRED_FOUND with *out filled,
 * CRED_UNKNOWN, or CRED_UNAVAILABLE with err set. Called without locks. */
typedef cred_result (*cred_fetch_fn)(void *ctx, const char *access_key, cred *out, ts_err *err);

typedef struct cred_cache cred_cache;

/* wait_ms: how long a request waits for another thread's fetch of the same key. */
cred_cache *cred_cache_new(int64_t ttl_ms, int64_t negative_ttl_ms, int64_t wait_ms,
                           cred_fetch_fn fetch, void *fetch_ctx);
void cred_cache_free(cred_cache *c);

cred_result cred_cache_get(cred_cache *c, const char *access_key, cred *out, ts_err *err);

void cred_cache_drop_key(cred_cache *c, const char *access_key);
void cred_cache_drop_user(cred_cache *c, const char *user_id);
void cred_cache_drop_all(cred_cache *c);

typedef struct cred_cache_stats {
    uint64_t hits, negative_hits, misses, coalesced, fetch_errors;
    uint64_t invalidated_key, invalidated_user, invalidated_all, dropped_entries;
    uint64_t entries;
} cred_cache_stats;
void cred_cache_get_stats(cred_cache *c, cred_cache_stats *out);

#endif
