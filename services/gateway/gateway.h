/* gateway.h: what the gateway's modules share: the configuration values and
 * the handles of the credential cache and the invalidation consumer. One
 * instance per process, made in main.c. */
#ifndef GATEWAY_GATEWAY_H
#define GATEWAY_GATEWAY_H

#include "libcommon/svc.h"

typedef struct cred_cache cred_cache;
typedef struct invalidation invalidation;

typedef struct gateway {
    svc *svc;
    /* configuration (main.c's option table) */
    char **auth_url;          /* "http://127.0.0.1:8091" */
    int64_t *cache_ttl_ms;    /* auth.cache_ttl */
    int64_t *negative_ttl_ms; /* auth.negative_cache_ttl */
    int64_t *auth_timeout_ms; /* auth.timeout: forwarded calls */
    /* modules */
    cred_cache *creds;
    invalidation *inval;
} gateway;

#endif
