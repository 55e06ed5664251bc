/* proxy.c: requests forwarded to an upstream service on a caller's behalf
 * (proxy.h), on libcommon/httpc.h. */
#include "proxy.h"

#include "libcommon/deps.h"
#include "libcommon/log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Response headers worth relaying to the client. */
static const char *const RELAYED[] = {"Retry-After", "Allow", "Location", "Content-Disposition",
                                      NULL};

const char *proxy_origin(const http_req *req)
{
    const char *t = req->target ? req->target : req->path;
    if (t[0] == '/') return t;
    const char *scheme = strstr(t, "://");
    const char *slash = scheme ? strchr(scheme + 3, '/') : NULL;
    return slash ? slash : "/";
}

char *proxy_v1_target(const http_req *req)
{
    const char *o = proxy_origin(req);
    return ts_asprintf("/v1%.*s", (int)strcspn(o, "#"), o);
}

static bool _is_json(const char *ct)
{
    return ct && (strncasecmp(ct, "application/json", 16) == 0 ||
                  strncasecmp(ct, "application/problem+json", 24) == 0);
}

/* The 503 of a call that got no answer (the details go to the log, not to
 * the client: they name internal addresses); resp NULL: only counted and
 * logged. */
static void _unanswered(upstream *up, int64_t timeout_ms, const char *method, bool timed_out,
                        const ts_err *err, http_resp *resp)
{
    atomic_fetch_add(&up->failures, 1);
    char q[600];
    TLOG_WARN("upstream did not answer a forwarded request",
              "upstream=%s method=%s timeout_ms=%" PRId64 " error=%s", up->service, method,
              timeout_ms, tlog_quote(q, sizeof(q), err->msg));
    if (!resp) return;
    if (timed_out)
        http_problem(resp, 503, "service-unavailable", "Service Unavailable",
                     "%s did not answer within %" PRId64 " ms; try again later", up->service,
                     timeout_ms);
    else
        http_problem(resp, 503, "service-unavailable", "Service Unavailable",
                     "%s is not reachable right now; try again later", up->service);
    char secs[16];
    snprintf(secs, sizeof(secs), "%d", DEPS_RETRY_AFTER_S);
    http_set_header(resp, "Retry-After", secs);
}

/* Call <up's URL><target> (method, body: len bytes, ct: its Content-Type,
 * NULL: req's, or application/json when there is a body) on id's behalf.
 * True with *a filled when an answer arrived; otherwise false with a 503
 * problem in resp (resp NULL: none). */
static bool _call(upstream *up, int64_t timeout_ms, const char *method, http_req *req,
                  http_resp *resp, const char *target, const gw_identity *id, const void *body,
                  size_t len, const char *ct, httpc_resp *a)
{
    const char *headers[5];
    size_t n = 0;
    headers[n++] = "Accept: application/json";
    if (!ct) ct = http_header(req, "Content-Type");
    char *ct_line =
        ct || len ? ts_asprintf("Content-Type: %s", ct ? ct : "application/json") : NULL;
    if (ct_line) headers[n++] = ct_line;
    char caller[128], caller_ak[64];
    if (id && id->user_id[0]) {
        snprintf(caller, sizeof(caller), "X-Tessera-Caller: %s", id->user_id);
        snprintf(caller_ak, sizeof(caller_ak), "X-Tessera-Caller-Access-Key: %s", id->access_key);
        headers[n++] = caller;
        headers[n++] = caller_ak;
    }
    headers[n] = NULL;
    httpc_call call = {.timeout_ms = (int)timeout_ms,
                       .connect_timeout_ms = PROXY_CONNECT_TIMEOUT_MS,
                       .max_body = PROXY_MAX_BODY,
                       .keep_headers = RELAYED};
    char *url = ts_asprintf("%s%s", up->url, target);
    ts_err err = {{0}};
    bool ok = httpc_request_ex(upstream_client(), &call, method, url, headers, len ? body : NULL,
                               len, req->request_id, a, &err);
    free(url);
    free(ct_line);
    if (!ok) _unanswered(up, timeout_ms, method, a->timed_out, &err, resp);
    return ok;
}

/* Relay an answer: status, body, Content-Type and the relayed headers; a bare
 * 5xx or an impossible status becomes a problem. */
static void _relay(const upstream *up, const httpc_resp *a, http_resp *resp)
{
    long status = a->status;
    const char *rct = a->content_type;
    if (status >= 500 && !_is_json(rct)) {
        /* Never hand the client a bare 5xx: wrap it. */
        http_problem(resp, status == 503 ? 503 : 502,
                     status == 503 ? "service-unavailable" : "bad-gateway", NULL, "%s answered %ld",
                     up->service, status);
    } else if (status < 100 || status > 599) {
        http_problem(resp, 502, "bad-gateway", NULL, "%s answered HTTP status %ld", up->service,
                     status);
    } else if (status == 204 || status == 304 || a->body_len == 0) {
        /* No body: no content type either (a client would try to parse it). */
        http_reply(resp, (int)status, NULL, NULL, 0);
        for (size_t i = 0; i < a->n_headers; i++)
            http_set_header(resp, a->header_names[i], a->header_values[i]);
    } else {
        http_reply(resp, (int)status, rct ? rct : "application/json", a->body, a->body_len);
        for (size_t i = 0; i < a->n_headers; i++)
            http_set_header(resp, a->header_names[i], a->header_values[i]);
    }
}

void proxy_forward(upstream *up, int64_t timeout_ms, http_req *req, http_resp *resp,
                   const char *target, const gw_identity *id, const void *body, size_t len)
{
    httpc_resp a;
    if (!_call(up, timeout_ms, req->method, req, resp, target, id, body, len, NULL, &a)) return;
    _relay(up, &a, resp);
    httpc_resp_free(&a);
}

bool proxy_call_json(upstream *up, int64_t timeout_ms, const char *method, http_req *req,
                     http_resp *resp, const char *target, const gw_identity *id, json_t *body,
                     int ok_status, json_t **out)
{
    *out = NULL;
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (body && !text) ts_panic("out of memory encoding a JSON body");
    httpc_resp a;
    bool got = _call(up, timeout_ms, method, req, resp, target, id, text, text ? strlen(text) : 0,
                     text ? "application/json" : NULL, &a);
    free(text);
    if (!got) return false;
    json_t *v = NULL;
    if (a.status == ok_status && a.body && _is_json(a.content_type))
        v = json_loadb(a.body, a.body_len, 0, NULL);
    if (json_is_object(v)) {
        *out = v;
    } else {
        json_decref(v);
        if (a.status == ok_status)
            http_problem(resp, 502, "bad-gateway", NULL, "%s answered %ld without a JSON object",
                         up->service, a.status);
        else
            _relay(up, &a, resp);
    }
    httpc_resp_free(&a);
    return *out != NULL;
}

bool proxy_fetch_json(upstream *up, int64_t timeout_ms, const char *method, http_req *req,
                      const char *target, const gw_identity *id, const json_t *body, long *status,
                      json_t **out, ts_err *err)
{
    *out = NULL;
    *status = 0;
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (body && !text) ts_panic("out of memory encoding a JSON body");
    httpc_resp a;
    bool got = _call(up, timeout_ms, method, req, NULL, target, id, text, text ? strlen(text) : 0,
                     text ? "application/json" : NULL, &a);
    free(text);
    if (!got) {
        ts_err_set(err, "%s is not reachable right now; try again later", up->service);
        return false;
    }
    *status = a.status;
    if (a.body && a.body_len && _is_json(a.content_type))
        *out = json_loadb(a.body, a.body_len, JSON_DECODE_ANY, NULL);
    httpc_resp_free(&a);
    return true;
}
