/* httpc.c: internal HTTP calls on one libcurl easy handle per httpc. The
 * handle is reset between requests, which keeps its connection cache, so
 * calls to the same host reuse a kept-alive connection. */
#include "libcommon/httpc.h"
#include "libcommon/buf.h"
#include "libcommon/log.h"
#include "libcommon/svcauth.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HTTPC_MAX_BODY ((size_t)64 * 1024 * 1024)

struct httpc {
    CURL *curl;
    int timeout_ms;
    bool sign;           /* httpc_new_internal */
    bool internal_ca;    /* trust http.ca_file: httpc_new_internal, httpc_trust_internal */
    const char *ca_file; /* httpc_use_ca_file */
};

static pthread_once_t g_curl_once = PTHREAD_ONCE_INIT;
static char *g_ca_file; /* httpc_set_ca_file: internal clients' trust anchors */

bool httpc_set_ca_file(const char *path, ts_err *err)
{
    if (!path || !*path) {
        free(g_ca_file);
        g_ca_file = NULL;
        return true;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        ts_err_set(err, "http.ca_file %s: %s", path, strerror(errno));
        return false;
    }
    char line[64] = "";
    bool pem = false;
    while (!pem && fgets(line, sizeof(line), f))
        pem = strncmp(line, "-----BEGIN CERTIFICATE-----", 27) == 0;
    fclose(f);
    if (!pem) {
        ts_err_set(err, "http.ca_file %s: no PEM certificate in it", path);
        return false;
    }
    free(g_ca_file);
    g_ca_file = ts_strdup(path);
    return true;
}

static void curl_init_once(void)
{
    CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) ts_panic("curl_global_init: %s", curl_easy_strerror(rc));
}

httpc *httpc_new(int timeout_ms)
{
    pthread_once(&g_curl_once, curl_init_once);
    httpc *c = ts_calloc(1, sizeof(*c));
    c->curl = curl_easy_init();
    if (!c->curl) ts_panic("curl_easy_init failed");
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : 10000;
    return c;
}

httpc *httpc_new_internal(int timeout_ms)
{
    httpc *c = httpc_new(timeout_ms);
    c->sign = true;
    c->internal_ca = true;
    return c;
}

void httpc_use_ca_file(httpc *c, const char *path)
{
    c->ca_file = path && *path ? path : NULL;
}

void httpc_trust_internal(httpc *c)
{
    c->internal_ca = true;
}

void httpc_free(httpc *c)
{
    if (!c) return;
    curl_easy_cleanup(c->curl);
    free(c);
}

static void headers_free(httpc_resp *r)
{
    for (size_t i = 0; i < r->n_headers; i++) {
        free(r->header_names[i]);
        free(r->header_values[i]);
    }
    r->n_headers = 0;
}

void httpc_resp_free(httpc_resp *r)
{
    if (!r) return;
    free(r->body);
    free(r->content_type);
    headers_free(r);
    memset(r, 0, sizeof(*r));
}

typedef struct sink {
    ts_buf b;
    size_t max;
    bool overflow;
} sink;

static size_t on_body(char *data, size_t size, size_t nmemb, void *userp)
{
    sink *s = userp;
    size_t n = size * nmemb;
    if (s->b.len + n > s->max) {
        s->overflow = true;
        return 0; /* makes curl fail with CURLE_WRITE_ERROR */
    }
    ts_buf_append(&s->b, data, n);
    return n;
}

/* Where the response headers to keep go. */
typedef struct header_sink {
    const char *const *keep;
    httpc_resp *out;
} header_sink;

static size_t on_header(char *data, size_t size, size_t nitems, void *userp)
{
    header_sink *hs = userp;
    httpc_resp *r = hs->out;
    size_t n = size * nitems;
    if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) { /* a new response (after a 1xx) */
        headers_free(r);
        return n;
    }
    const char *colon = memchr(data, ':', n);
    if (!colon || r->n_headers >= HTTPC_KEEP_MAX) return n;
    size_t nlen = (size_t)(colon - data);
    for (const char *const *k = hs->keep; *k; k++) {
        if (strlen(*k) != nlen || strncasecmp(*k, data, nlen) != 0) continue;
        const char *v = colon + 1, *end = data + n;
        while (v < end && (*v == ' ' || *v == '\t'))
            v++;
        while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
            end--;
        r->header_names[r->n_headers] = ts_strdup(*k);
        r->header_values[r->n_headers] = ts_strndup(v, (size_t)(end - v));
        r->n_headers++;
        break;
    }
    return n;
}

/* The value of header name in a "Name: value" list, or NULL. */
static const char *header_value(const char *const *headers, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; headers && headers[i]; i++) {
        if (strncasecmp(headers[i], name, n) != 0 || headers[i][n] != ':') continue;
        const char *v = headers[i] + n + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        return v;
    }
    return NULL;
}

static bool add_header(struct curl_slist **list, const char *h)
{
    struct curl_slist *n = curl_slist_append(*list, h);
    if (!n) return false;
    *list = n;
    return true;
}

bool httpc_request(httpc *c, const char *method, const char *url, const char *const *headers,
                   const void *body, size_t body_len, const char *request_id, httpc_resp *out,
                   ts_err *err)
{
    return httpc_request_ex(c, NULL, method, url, headers, body, body_len, request_id, out, err);
}

bool httpc_request_ex(httpc *c, const httpc_call *call, const char *method, const char *url,
                      const char *const *headers, const void *body, size_t body_len,
                      const char *request_id, httpc_resp *out, ts_err *err)
{
    memset(out, 0, sizeof(*out));
    if (!method || !url) {
        ts_err_set(err, "http request: no method or URL");
        return false;
    }
    static const httpc_call none;
    if (!call) call = &none;
    long timeout = call->timeout_ms > 0 ? call->timeout_ms : c->timeout_ms;
    CURL *h = c->curl;
    curl_easy_reset(h); /* options only; the connection cache stays */
    char errbuf[CURL_ERROR_SIZE] = "";
    sink s = {.max = call->max_body ? call->max_body : HTTPC_MAX_BODY};
    header_sink hs = {.keep = call->keep_headers, .out = out};
    struct curl_slist *hdrs = NULL;
    bool ok = true;

    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                     call->connect_timeout_ms > 0 ? (long)call->connect_timeout_ms : timeout);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
    if (call->keep_headers) {
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, &hs);
    }
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (c->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    else if (c->internal_ca && g_ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, g_ca_file);
    /* the target goes out as written: it is what a signature covers */
    curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);

    if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "GET") == 0 && !body) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else {
        if (strcmp(method, "POST") != 0) curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        if (body || strcmp(method, "GET") != 0) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? (const char *)body : "");
        }
    }

    for (size_t i = 0; ok && headers && headers[i]; i++)
        ok = add_header(&hdrs, headers[i]);
    /* No 100-continue round trip on large bodies. */
    if (ok) ok = add_header(&hdrs, "Expect:");
    if (ok && request_id && *request_id) {
        char line[160];
        snprintf(line, sizeof(line), "X-Request-ID: %s", request_id);
        ok = add_header(&hdrs, line);
    }
    if (ok && c->sign) {
        size_t tlen;
        const char *target = svcauth_url_target(url, &tlen);
        char line[SVCAUTH_HEADER_LINE_MAX];
        if (svcauth_sign(method, target, tlen, header_value(headers, "X-Tessera-Caller"),
                         header_value(headers, "X-Tessera-Caller-Access-Key"), body,
                         body && strcmp(method, "HEAD") != 0 ? body_len : 0, line))
            ok = add_header(&hdrs, line);
    }
    if (!ok) {
        curl_slist_free_all(hdrs);
        ts_err_set(err, "%s %s: out of memory building headers", method, url);
        return false;
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);

    CURLcode rc = curl_easy_perform(h);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hdrs);
    if (rc != CURLE_OK) {
        if (s.overflow)
            ts_err_set(err, "%s %s: response body larger than %zu bytes", method, url, s.max);
        else
            ts_err_set(err, "%s %s: %s", method, url, errbuf[0] ? errbuf : curl_easy_strerror(rc));
        ts_buf_free(&s.b);
        headers_free(out);
        out->timed_out = rc == CURLE_OPERATION_TIMEDOUT;
        return false;
    }

    long status = 0;
    char *ct = NULL;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct);
    out->status = status;
    out->body = ts_buf_steal(&s.b, &out->body_len);
    out->content_type = ct ? ts_strdup(ct) : NULL;
    return true;
}

bool httpc_json(httpc *c, const char *method, const char *url, json_t *body, const char *request_id,
                long *status, json_t **out_json, ts_err *err)
{
    char *text = NULL;
    if (body) {
        text = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!text) {
            ts_err_set(err, "%s %s: request body could not be encoded as JSON", method, url);
            return false;
        }
    }
    static const char *const hdrs[] = {"Content-Type: application/json", "Accept: application/json",
                                       NULL};
    httpc_resp r;
    bool ok =
        httpc_request(c, method, url, hdrs, text, text ? strlen(text) : 0, request_id, &r, err);
    free(text);
    if (out_json) *out_json = NULL;
    if (!ok) {
        if (status) *status = 0;
        return false;
    }
    if (status) *status = r.status;
    if (out_json && r.body_len) *out_json = json_loadb(r.body, r.body_len, JSON_DECODE_ANY, NULL);
    httpc_resp_free(&r);
    return true;
}

char *httpc_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    bool dots = strcmp(s, ".") == 0 || strcmp(s, "..") == 0;
    char *out = ts_malloc(strlen(s) * 3 + 1), *o = out;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '_' || *p == '~' || (*p == '.' && !dots)) {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    *o = '\0';
    return out;
}
