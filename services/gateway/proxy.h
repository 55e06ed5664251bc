/* proxy.h: the gateway's calls to the services behind it (docs/internal-api.md):
 * credential look-ups on tessera-auth for the cache, and requests forwarded on
 * a caller's behalf (to auth, to the registry) with X-Tessera-Caller,
 * X-Tessera-Caller-Access-Key and X-Request-ID. The upstream's status, body,
 * Content-Type and Retry-After/Allow/Location/Content-Disposition headers are
 * relayed; a bare (non-JSON) 5xx is wrapped in a problem; when the upstream
 * cannot be reached or does not answer in time the answer is a 503 problem. */
#ifndef GATEWAY_PROXY_H
#define GATEWAY_PROXY_H

#include "cred_cache.h"
#include "gateway.h"
#include "verify.h"

#include <stdatomic.h>

/* cred_fetch_fn for the cache: GET <auth>/v1/credentials/{ak}; ctx is the gateway. */
cred_result proxy_fetch_credentials(void *gw, const char *access_key, cred *out, ts_err *err);

/* A service requests are forwarded to; one static instance per upstream. */
typedef struct proxy_upstream {
    const char *name;          /* "tessera-registry": in messages and log lines */
    _Atomic uint64_t failures; /* forwarded calls it did not answer (for /metrics) */
} proxy_upstream;

/* Forward req to <base_url><target> with req's method and Content-Type, and
 * body (len bytes; may differ from req's); id is the caller (NULL:
 * anonymous); the upstream has timeout_ms to answer completely. The thread
 * blocks meanwhile (one HTTP worker thread per forwarded call). */
void proxy_forward(proxy_upstream *up, const char *base_url, int64_t timeout_ms, http_req *req,
                   http_resp *resp, const char *target, const gw_identity *id, const void *body,
                   size_t len);

/* A call of the gateway's own on the caller's behalf (same headers as
 * proxy_forward; req gives the X-Request-ID): method <base_url><target> with
 * body as JSON (NULL: none). The answer's JSON object when it answered
 * ok_status with one (the caller decrefs); otherwise NULL with resp holding
 * what the client gets: the upstream's answer relayed as proxy_forward would,
 * a 502 problem for a malformed one, or a 503 problem when it did not answer. */
json_t *proxy_call_json(proxy_upstream *up, const char *base_url, int64_t timeout_ms,
                        const char *method, http_req *req, http_resp *resp, const char *target,
                        const gw_identity *id, json_t *body, int ok_status);

/* Forward req to <auth><upstream_target> with req's method and
 * Content-Type, and body (len bytes; may differ from req's); id is the
 * caller (NULL: anonymous). */
void proxy_to_auth(gateway *gw, http_req *req, http_resp *resp, const char *upstream_target,
                   const gw_identity *id, const void *body, size_t len);

/* Forwarded calls that got no answer from auth (auth.timeout). */
uint64_t proxy_failures(void);

#endif
