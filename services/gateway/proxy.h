/* proxy.h: requests forwarded to the services behind the gateway
 * (upstream.h) on a caller's behalf, on libcommon's HTTP client
 * (docs/internal-api.md): with X-Tessera-Caller and
 * X-Tessera-Caller-Access-Key (the verified caller; none for an anonymous
 * call), X-Request-ID and the gateway's service signature. The upstream's
 * status, body, Content-Type and Retry-After/Allow/Location/
 * Content-Disposition headers are relayed (an answer without a body, 204
 * and 304 always, with no Content-Type); a bare (non-JSON) 5xx is wrapped
 * in a problem; when the upstream cannot be reached or does not answer in
 * time the answer is a 503 problem with Retry-After (the details go to the
 * log) and the upstream's failure count grows. The thread blocks meanwhile
 * (one HTTP worker thread per forwarded call). */
#ifndef GATEWAY_PROXY_H
#define GATEWAY_PROXY_H

#include "identity.h"
#include "upstream.h"

#define PROXY_MAX_BODY ((size_t)16 * 1024 * 1024) /* larger answers: 503 */
#define PROXY_CONNECT_TIMEOUT_MS 2000

/* Forward req to <up's URL><target> with req's method and Content-Type, and
 * body (len bytes; may differ from req's); id is the caller (NULL:
 * anonymous); the upstream has timeout_ms to answer completely. */
void proxy_forward(upstream *up, int64_t timeout_ms, http_req *req, http_resp *resp,
                   const char *target, const gw_identity *id, const void *body, size_t len);

/* A call of the gateway's own on the caller's behalf (same headers as
 * proxy_forward; req gives the X-Request-ID): method <up's URL><target> with
 * body as JSON (NULL: none). True with *out (the caller decrefs) when it
 * answered ok_status with a JSON object; otherwise false with resp holding
 * what the client gets: the upstream's answer relayed as proxy_forward
 * would, a 502 problem for a malformed one, or a 503 problem when it did not
 * answer. */
bool proxy_call_json(upstream *up, int64_t timeout_ms, const char *method, http_req *req,
                     http_resp *resp, const char *target, const gw_identity *id, json_t *body,
                     int ok_status, json_t **out) TS_MUST_CHECK;

/* The same call for callers that do not answer with the upstream's answer
 * (GraphQL's resolvers): true when it answered, with *status and *out (its
 * JSON of any type, NULL when the answer has none); false with err when it
 * did not answer (counted and logged as for proxy_forward). */
bool proxy_fetch_json(upstream *up, int64_t timeout_ms, const char *method, http_req *req,
                      const char *target, const gw_identity *id, const json_t *body, long *status,
                      json_t **out, ts_err *err) TS_MUST_CHECK;

/* The origin-form part of req's raw target ("/session/a%20b?x=1"), also of
 * an absolute-form one ("http://host/session/..."). */
const char *proxy_origin(const http_req *req);
/* "/v1" + that, without a fragment: where the services serve a public
 * route ("/admin/users?x" -> "/v1/admin/users?x"). Heap. */
char *proxy_v1_target(const http_req *req);

#endif
