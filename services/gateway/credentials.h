/* credentials.h: what the gateway knows about access keys, so that verifying
 * a signed request costs no round trip to tessera-auth.
 *
 * access key -> {secret, user id, role, domain, key and user status,
 * rate_limit, is_admin}, from auth's GET /v1/credentials/{ak} (on the auth
 * upstream), kept in a libcommon/authcache.h cache: for auth.cache_ttl; an
 * unknown key for auth.negative_cache_ttl, so a flood of one bad key cannot
 * hammer auth; concurrent misses of one key wait (up to CREDENTIALS_WAIT_MS)
 * for one fetch; after a failed fetch, the requests that waited for it and
 * those within CREDENTIALS_ERROR_TTL_MS get its error instead of each
 * waiting for auth's timeout. At most CREDENTIALS_MAX entries (16 shards,
 * least recently used out). Entries are dropped by key, by user or all at
 * once on tessera.auth.v1 events (libcommon/auth_events.h, as CREDENTIALS:
 * project, membership and resource group events leave them alone).
 *
 * /readyz check "auth-events"; metrics tessera_gateway_cred_cache_* and
 * tessera_gateway_auth_events_total (docs/operations.md). */
#ifndef GATEWAY_CREDENTIALS_H
#define GATEWAY_CREDENTIALS_H

#include "upstream.h"

#include "libcommon/authcache.h"
#include "libcommon/sign.h"

#define CRED_USER_ID_MAX 64
#define CRED_ROLE_MAX 16
#define CRED_STATUS_MAX 16
#define CRED_DOMAIN_MAX 65

#define CREDENTIALS_WAIT_MS 3000
#define CREDENTIALS_ERROR_TTL_MS 500
#define CREDENTIALS_MAX 65536

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

typedef struct credentials credentials;

/* The cache (and its metrics on s); credentials come from auth. */
credentials *credentials_new(svc *s, const upstream *auth, int64_t ttl_ms, int64_t negative_ttl_ms);
/* Start the tessera.auth.v1 consumer (once the bus is connected). */
bool credentials_start(credentials *cr, ts_err *err) TS_MUST_CHECK;
void credentials_stop(credentials *cr);

/* The credentials of access_key: AUTHCACHE_FOUND with *out filled,
 * AUTHCACHE_NOT_FOUND (auth does not know the key), or AUTHCACHE_UNAVAILABLE
 * with err (auth could not be asked). */
authcache_result credentials_get(credentials *cr, const char *access_key, cred *out,
                                 ts_err *err) TS_MUST_CHECK;

#endif
