/* authctx.h: who calls an internal service, and what tessera-auth says the
 * caller may do. The gateway verifies a request's signature and forwards
 * the caller in X-Tessera-Caller (user id) and X-Tessera-Caller-Access-Key
 * (docs/internal-api.md); the services own no users, so they ask
 * tessera-auth's GET /v1/session-context?access_key=[&group=] for the
 * keypair's context (role, domain, policies, projects, allowed hosts).
 * The registry and tessera-vfolder resolve their callers here.
 *
 * With cache_ttl_ms > 0 the 200 answers are kept (authcache.h; key: access
 * key and group; at most cache_entries, least recently used out) and dropped
 * earlier on tessera.auth.v1 events (auth_events.h, as CONTEXTS); nothing is
 * kept before that consumer has its partitions. Other answers are never
 * kept. Metrics: <prefix>_context_cache_*, <prefix>_auth_events_total. */
#ifndef TESSERA_AUTHCTX_H
#define TESSERA_AUTHCTX_H

#include "libcommon/http.h"
#include "libcommon/svc.h"

#include <jansson.h>

typedef struct authctx_opts {
    const char *auth_url;       /* base URL of tessera-auth (kept as a pointer) */
    int64_t timeout_ms;         /* of a call to auth */
    int64_t cache_ttl_ms;       /* 0: no cache, no consumer */
    int64_t cache_entries;      /* >= 1 */
    const char *metrics_prefix; /* "tessera_registry" */
} authctx_opts;

typedef struct authctx authctx;

/* Usable at once (without a cache until authctx_start). */
authctx *authctx_new(const authctx_opts *o);
/* The cache and its consumer (when cache_ttl_ms > 0) and the metrics. */
bool authctx_start(authctx *a, svc *s, ts_err *err) TS_MUST_CHECK;
/* Stop the consumer; the cache stays (HTTP workers may still use it). */
void authctx_stop(authctx *a);

/* The session context of access_key (group may be NULL): true with
 * *status (auth's HTTP status; 200: *body is the context, a JSON object) and
 * *body (its JSON body, the caller's; may be NULL); false when auth did not
 * answer (err says why). A cached context answers 200 without asking auth. */
bool authctx_get(authctx *a, const char *access_key, const char *group, const char *request_id,
                 long *status, json_t **body, ts_err *err) TS_MUST_CHECK;

/* The caller a request names. */
typedef enum authctx_caller {
    AUTHCTX_CALLER_OK,      /* *user_id and *access_key point into req's headers */
    AUTHCTX_CALLER_NONE,    /* no X-Tessera-Caller, or not a UUID */
    AUTHCTX_CALLER_BAD_KEY, /* X-Tessera-Caller-Access-Key missing or not 20 characters */
} authctx_caller;
authctx_caller authctx_caller_of(const http_req *req, const char **user_id,
                                 const char **access_key);

/* Whether a context is an active keypair of user_id (NULL: of anyone). */
typedef enum authctx_verdict {
    AUTHCTX_ACTIVE,
    AUTHCTX_NOT_CALLERS,   /* user.id is not user_id */
    AUTHCTX_KEY_INACTIVE,  /* is_active is not true */
    AUTHCTX_USER_INACTIVE, /* user.status is not "active" */
} authctx_verdict;
authctx_verdict authctx_check(const json_t *ctx, const char *user_id);

/* A string member of the context's user object ("role", "domain_name"), or "". */
const char *authctx_user_field(const json_t *ctx, const char *name);

#endif
