/* proxy.c: credential look-ups on tessera-auth, and requests forwarded to an
 * upstream service (auth, registry) on a caller's behalf. */
#include "proxy.h"

#include "libcommon/deps.h"
#include "libcommon/log.h"
#include "libcommon/svcauth.h"
#include "upstream.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PROXY_MAX_BODY ((size_t)16 * 1024 * 1024)
/* Response headers worth relaying to the client. */
static const char *const RELAYED[] = {"Retry-After", "Allow", "Location", "Content-Disposition",
                                      NULL};
#define MAX_RELAYED 8

static proxy_upstream g_auth = {.name = "tessera-auth"};

uint64_t proxy_failures(void)
{
    return atomic_load(&g_auth.failures);
}

/* ---- credential look-ups ---------------------------------------------------------- */

static bool _copy_str(json_t *obj, const char *key, char *dst, size_t size, bool required)
{
    const char *v = json_string_value(json_object_get(obj, key));
    if (!v) {
        dst[0] = '\0';
        return !required;
    }
    if (strlen(v) >= size) return false;
    ts_strlcpy(dst, v, size);
    return true;
}

cred_result proxy_fetch_credentials(void *ctx, const char *ak, cred *out, ts_err *err)
{
    gateway *gw = ctx;
    char *url = ts_asprintf("%s/v1/credentials/%s", *gw->auth_url, ak);
    long status = 0;
    json_t *body = NULL;
    bool ok = httpc_json(upstream_client(), "GET", url, NULL, NULL, &status, &body, err);
    free(url);
    if (!ok) {
        ts_err_prefix(err, "tessera-auth credential look-up");
        return CRED_UNAVAILABLE;
    }
    cred_result r = CRED_UNAVAILABLE;
    json_t *user = json_object_get(body, "user");
    if (status == 404) {
        r = CRED_UNKNOWN;
    } else if (status != 200 || !json_is_object(body) || !json_is_object(user)) {
        ts_err_set(err, "tessera-auth credential look-up answered %ld%s", status,
                   status == 200 ? " without a user object" : "");
    } else if (!_copy_str(body, "access_key", out->access_key, sizeof(out->access_key), true) ||
               strcmp(out->access_key, ak) != 0 ||
               !_copy_str(body, "secret_key", out->secret_key, sizeof(out->secret_key), true) ||
               strlen(out->secret_key) == 0 ||
               !_copy_str(user, "id", out->user_id, sizeof(out->user_id), true) ||
               !_copy_str(user, "role", out->role, sizeof(out->role), false) ||
               !_copy_str(user, "status", out->user_status, sizeof(out->user_status), true) ||
               !_copy_str(user, "domain_name", out->domain, sizeof(out->domain), false)) {
        ts_err_set(err, "tessera-auth credential look-up: malformed answer (access_key, "
                        "secret_key, user.id or user.status missing or too long)");
    } else {
        out->key_active = json_is_true(json_object_get(body, "is_active"));
        out->is_admin = json_is_true(json_object_get(body, "is_admin"));
        json_t *rl = json_object_get(body, "rate_limit");
        out->rate_limit = json_is_integer(rl) ? json_integer_value(rl) : 0;
        r = CRED_FOUND;
    }
    json_decref(body);
    return r;
}

/* ---- forwarding ------------------------------------------------------------------- */

static pthread_key_t g_curl_key;
static pthread_once_t g_curl_once = PTHREAD_ONCE_INIT;

static void _curl_free(void *h)
{
    curl_easy_cleanup(h);
}

static void _curl_key_init(void)
{
    pthread_key_create(&g_curl_key, _curl_free);
}

/* This thread's easy handle (kept: its connection cache keeps auth's connection). */
static CURL *_curl(void)
{
    pthread_once(&g_curl_once, _curl_key_init);
    CURL *h = pthread_getspecific(g_curl_key);
    if (!h) {
        (void)upstream_client(); /* runs curl_global_init once, before any handle */
        h = curl_easy_init();
        if (!h) ts_panic("curl_easy_init failed");
        pthread_setspecific(g_curl_key, h);
    }
    return h;
}

typedef struct answer {
    long status;
    char *content_type;
    char *body;
    size_t len, cap;
    bool overflow;
    int n_headers;
    char *headers[MAX_RELAYED][2];
} answer;

static size_t _on_body(char *data, size_t size, size_t nmemb, void *userp)
{
    answer *a = userp;
    size_t n = size * nmemb;
    if (a->len + n > PROXY_MAX_BODY) {
        a->overflow = true;
        return 0;
    }
    if (a->len + n + 1 > a->cap) {
        size_t cap = a->cap ? a->cap : 4096;
        while (cap < a->len + n + 1)
            cap *= 2;
        a->body = ts_realloc(a->body, cap);
        a->cap = cap;
    }
    memcpy(a->body + a->len, data, n);
    a->len += n;
    a->body[a->len] = '\0';
    return n;
}

static void _answer_free(answer *a)
{
    free(a->body);
    free(a->content_type);
    for (int i = 0; i < a->n_headers; i++) {
        free(a->headers[i][0]);
        free(a->headers[i][1]);
    }
    memset(a, 0, sizeof(*a));
}

static size_t _on_header(char *data, size_t size, size_t nitems, void *userp)
{
    answer *a = userp;
    size_t n = size * nitems;
    if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) { /* a new response (after 1xx) */
        for (int i = 0; i < a->n_headers; i++) {
            free(a->headers[i][0]);
            free(a->headers[i][1]);
        }
        a->n_headers = 0;
        return n;
    }
    const char *colon = memchr(data, ':', n);
    if (!colon || a->n_headers >= MAX_RELAYED) return n;
    size_t nlen = (size_t)(colon - data);
    for (const char *const *h = RELAYED; *h; h++) {
        if (strlen(*h) != nlen || strncasecmp(*h, data, nlen) != 0) continue;
        const char *v = colon + 1, *end = data + n;
        while (v < end && (*v == ' ' || *v == '\t'))
            v++;
        while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
            end--;
        a->headers[a->n_headers][0] = ts_strdup(*h);
        a->headers[a->n_headers][1] = ts_strndup(v, (size_t)(end - v));
        a->n_headers++;
        break;
    }
    return n;
}

static bool _add(struct curl_slist **l, const char *line)
{
    struct curl_slist *n = curl_slist_append(*l, line);
    if (!n) return false;
    *l = n;
    return true;
}

static bool _is_json(const char *ct)
{
    return ct && (strncasecmp(ct, "application/json", 16) == 0 ||
                  strncasecmp(ct, "application/problem+json", 24) == 0);
}

/* Call <base_url><target> (method, body: len bytes, ct: its Content-Type, NULL:
 * req's or application/json) on id's behalf. True with *a filled when an
 * answer arrived; otherwise false with a 503 problem in resp (the details go
 * to the log). */
static bool _call(proxy_upstream *up, const char *base_url, int64_t timeout_ms, const char *method,
                  http_req *req, http_resp *resp, const char *target, const gw_identity *id,
                  const void *body, size_t len, const char *ct, answer *a)
{
    char *url = ts_asprintf("%s%s", base_url, target);
    CURL *h = _curl();
    curl_easy_reset(h);
    char errbuf[CURL_ERROR_SIZE] = "";
    memset(a, 0, sizeof(*a));
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, _on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, _on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, a);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L); /* sent as signed */

    if (strcmp(method, "GET") == 0 && len == 0) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, len ? (const char *)body : "");
    }

    struct curl_slist *hdrs = NULL;
    char line[256];
    bool ok = _add(&hdrs, "Expect:") && _add(&hdrs, "Accept: application/json");
    if (!ct) ct = http_header(req, "Content-Type");
    if (ok && (ct || len)) {
        char *l = ts_asprintf("Content-Type: %s", ct ? ct : "application/json");
        ok = _add(&hdrs, l);
        free(l);
    }
    if (ok && id && id->user_id[0]) {
        snprintf(line, sizeof(line), "X-Tessera-Caller: %s", id->user_id);
        ok = _add(&hdrs, line);
        snprintf(line, sizeof(line), "X-Tessera-Caller-Access-Key: %s", id->access_key);
        ok = ok && _add(&hdrs, line);
    }
    snprintf(line, sizeof(line), "X-Request-ID: %s", req->request_id);
    ok = ok && _add(&hdrs, line);
    size_t tlen;
    const char *utarget = svcauth_url_target(url, &tlen);
    char auth[SVCAUTH_HEADER_LINE_MAX];
    bool caller = id && id->user_id[0];
    if (ok && svcauth_sign(method, utarget, tlen, caller ? id->user_id : NULL,
                           caller ? id->access_key : NULL, body,
                           strcmp(method, "HEAD") == 0 ? 0 : len, auth))
        ok = _add(&hdrs, auth);
    if (!ok) ts_panic("out of memory building forwarded headers");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);

    CURLcode rc = curl_easy_perform(h);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hdrs);
    if (rc != CURLE_OK) {
        atomic_fetch_add(&up->failures, 1);
        bool slow = rc == CURLE_OPERATION_TIMEDOUT;
        const char *why = a->overflow ? "answer too large"
                          : errbuf[0] ? errbuf
                                      : curl_easy_strerror(rc);
        char q[300];
        TLOG_WARN("upstream did not answer a forwarded request",
                  "upstream=%s method=%s url=%s timeout_ms=%" PRId64 " error=%s", up->name, method,
                  url, timeout_ms, tlog_quote(q, sizeof(q), why));
        /* The details (internal addresses) go to the log, not to the client. */
        if (slow)
            http_problem(resp, 503, "service-unavailable", "Service Unavailable",
                         "%s did not answer within %" PRId64 " ms; try again later", up->name,
                         timeout_ms);
        else
            http_problem(resp, 503, "service-unavailable", "Service Unavailable",
                         "%s is not reachable right now; try again later", up->name);
        char secs[16];
        snprintf(secs, sizeof(secs), "%d", DEPS_RETRY_AFTER_S);
        http_set_header(resp, "Retry-After", secs);
        _answer_free(a);
        free(url);
        return false;
    }
    char *rct = NULL;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a->status);
    curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &rct);
    a->content_type = rct ? ts_strdup(rct) : NULL;
    free(url);
    return true;
}

/* Relay an answer: status, body, Content-Type and the relayed headers; a bare
 * 5xx or an impossible status becomes a problem. */
static void _relay(proxy_upstream *up, const answer *a, http_resp *resp)
{
    long status = a->status;
    const char *rct = a->content_type;
    if (status >= 500 && !_is_json(rct)) {
        /* Never hand the client a bare 5xx: wrap it. */
        http_problem(resp, status == 503 ? 503 : 502,
                     status == 503 ? "service-unavailable" : "bad-gateway", NULL, "%s answered %ld",
                     up->name, status);
    } else if (status < 100 || status > 599) {
        http_problem(resp, 502, "bad-gateway", NULL, "%s answered HTTP status %ld", up->name,
                     status);
    } else {
        http_reply(resp, (int)status, rct ? rct : "application/json", a->body ? a->body : "",
                   a->len);
        for (int i = 0; i < a->n_headers; i++)
            http_set_header(resp, a->headers[i][0], a->headers[i][1]);
    }
}

void proxy_forward(proxy_upstream *up, const char *base_url, int64_t timeout_ms, http_req *req,
                   http_resp *resp, const char *target, const gw_identity *id, const void *body,
                   size_t len)
{
    answer a;
    if (!_call(up, base_url, timeout_ms, req->method, req, resp, target, id, body, len, NULL, &a))
        return;
    _relay(up, &a, resp);
    _answer_free(&a);
}

json_t *proxy_call_json(proxy_upstream *up, const char *base_url, int64_t timeout_ms,
                        const char *method, http_req *req, http_resp *resp, const char *target,
                        const gw_identity *id, json_t *body, int ok_status)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (body && !text) ts_panic("out of memory encoding a JSON body");
    answer a;
    bool got = _call(up, base_url, timeout_ms, method, req, resp, target, id, text,
                     text ? strlen(text) : 0, text ? "application/json" : NULL, &a);
    free(text);
    if (!got) return NULL;
    json_t *out = NULL;
    if (a.status == ok_status && a.body && _is_json(a.content_type))
        out = json_loadb(a.body, a.len, 0, NULL);
    if (!json_is_object(out)) {
        json_decref(out);
        out = NULL;
        if (a.status == ok_status)
            http_problem(resp, 502, "bad-gateway", NULL, "%s answered %ld without a JSON object",
                         up->name, a.status);
        else
            _relay(up, &a, resp);
    }
    _answer_free(&a);
    return out;
}

void proxy_to_auth(gateway *gw, http_req *req, http_resp *resp, const char *target,
                   const gw_identity *id, const void *body, size_t len)
{
    proxy_forward(&g_auth, *gw->auth_url, *gw->auth_timeout_ms, req, resp, target, id, body, len);
}
