/* proxy.h: the gateway's calls to tessera-auth (docs/internal-api.md):
 * credential look-ups for the cache, and requests forwarded on a caller's
 * behalf with X-Tessera-Caller, X-Tessera-Caller-Access-Key and X-Request-ID.
 * Auth's status, body, Content-Type and Retry-After/Allow/Location headers
 * are relayed; when auth cannot be reached the answer is a 503 problem. */
#ifndef GATEWAY_PROXY_H
#define GATEWAY_PROXY_H

#include "cred_cache.h"
#include "gateway.h"
#include "verify.h"

/* cred_fetch_fn for the cache: GET <auth>/v1/credentials/{ak}; ctx is the gateway. */
cred_result proxy_fetch_credentials(void *gw, const char *access_key, cred *out, ts_err *err);

/* Forward req to <auth><upstream_target> with req's method and
 * Content-Type, and body (len bytes; may differ from req's); id is the
 * caller (NULL: anonymous). */
void proxy_to_auth(gateway *gw, http_req *req, http_resp *resp, const char *upstream_target,
                   const gw_identity *id, const void *body, size_t len);

/* Forwarded calls that got no answer from auth. */
uint64_t proxy_failures(void);

#endif
