/* http_request.c: the request object (http_request.h): headers and query
 * arguments, locally built requests (http_req_new_local, for in-process
 * dispatch), streaming routes' registration, and streamed response bodies
 * (a file descriptor or a reader hang off the request until the server or
 * local dispatch builds the response). */
#include "libcommon/http_request.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* ---- request accessors ------------------------------------------------------ */

const char *http_req_keep(struct http_req_impl *impl, char *s)
{
    if (impl->n_scratch == impl->cap_scratch) {
        impl->cap_scratch = impl->cap_scratch ? impl->cap_scratch * 2 : 4;
        impl->scratch = ts_realloc(impl->scratch, impl->cap_scratch * sizeof(char *));
    }
    impl->scratch[impl->n_scratch++] = s;
    return s;
}

void http_src_release(body_src *src)
{
    if (src->kind == SRC_FD && src->fd >= 0) close(src->fd);
    if ((src->kind == SRC_READER || src->kind == SRC_UPGRADE) && src->release)
        src->release(src->cls);
    memset(src, 0, sizeof(*src));
}

void http_impl_release(struct http_req_impl *impl)
{
    http_src_release(&impl->src);
    for (size_t i = 0; i < impl->n_scratch; i++)
        free(impl->scratch[i]);
    free(impl->scratch);
    for (size_t i = 0; i < impl->n_headers; i++)
        free(impl->headers[i]);
    free(impl->headers);
    memset(impl, 0, sizeof(*impl));
}

const char *http_header(const http_req *req, const char *name)
{
    const struct http_req_impl *impl = req->impl;
    if (!impl || !name) return NULL;
    if (impl->conn) return MHD_lookup_connection_value(impl->conn, MHD_HEADER_KIND, name);
    size_t nlen = strlen(name);
    for (size_t i = 0; i < impl->n_headers; i++) {
        const char *h = impl->headers[i];
        if (strncasecmp(h, name, nlen) == 0 && h[nlen] == ':')
            return h + nlen + 1 + strspn(h + nlen + 1, " \t");
    }
    return NULL;
}

/* Query component decoding: '+' is a space, then %XX. */
static char *query_decode(const char *s, size_t len)
{
    char *out = ts_strndup(s, len);
    for (char *p = out; *p; p++)
        if (*p == '+') *p = ' ';
    MHD_http_unescape(out);
    return out;
}

const char *http_query_arg(const http_req *req, const char *name)
{
    struct http_req_impl *impl = req->impl;
    if (!impl || !req->query || !name) return NULL;
    for (const char *p = req->query; *p;) {
        size_t plen = strcspn(p, "&");
        size_t klen = strcspn(p, "=&");
        char *key = query_decode(p, klen);
        bool hit = strcmp(key, name) == 0;
        free(key);
        if (hit) {
            const char *v = klen < plen ? p + klen + 1 : p + klen;
            return http_req_keep(impl, query_decode(v, (size_t)(p + plen - v)));
        }
        p += plen;
        if (*p == '&') p++;
    }
    return NULL;
}

/* ---- building the request ------------------------------------------------- */

static bool request_id_sane(const char *id)
{
    if (!id) return false;
    size_t n = strlen(id);
    if (n < 1 || n > REQUEST_ID_MAX) return false;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

void http_req_pick_id(const char *given, char out[REQUEST_ID_MAX + 1])
{
    if (request_id_sane(given)) {
        ts_strlcpy(out, given, REQUEST_ID_MAX + 1);
    } else {
        char id[TS_UUID_STRLEN];
        ts_uuid4(id);
        ts_strlcpy(out, id, REQUEST_ID_MAX + 1);
    }
}

void http_split_target(const char *target, const char *fallback, char **path, char **query)
{
    const char *q = strchr(target, '?');
    *query = ts_strdup(q ? q + 1 : "");
    if (target[0] == '/') {
        *path = ts_strndup(target, q ? (size_t)(q - target) : strlen(target));
        MHD_http_unescape(*path);
    } else {
        *path = ts_strdup(fallback ? fallback : target);
    }
}

typedef struct local_req {
    http_req req;
    struct http_req_impl impl;
    char *method, *target, *path, *query, *body;
    char request_id[REQUEST_ID_MAX + 1];
} local_req;

http_req *http_req_new_local(const char *method, const char *target, const char *const *headers,
                             const void *body, size_t body_len)
{
    local_req *l = ts_calloc(1, sizeof(*l));
    l->method = ts_strdup(method ? method : "GET");
    l->target = ts_strdup(target ? target : "/");
    http_split_target(l->target, NULL, &l->path, &l->query);
    l->body = ts_malloc(body_len + 1);
    if (body && body_len) memcpy(l->body, body, body_len);
    l->body[body_len] = '\0';
    for (size_t i = 0; headers && headers[i]; i++) {
        l->impl.headers = ts_realloc(l->impl.headers, (i + 1) * sizeof(char *));
        l->impl.headers[i] = ts_strdup(headers[i]);
        l->impl.n_headers = i + 1;
    }
    l->req.impl = &l->impl;
    http_req_pick_id(http_header(&l->req, "X-Request-ID"), l->request_id);
    l->req.method = l->method;
    l->req.target = l->target;
    l->req.path = l->path;
    l->req.query = l->query;
    l->req.body = l->body;
    l->req.body_len = body_len;
    l->req.request_id = l->request_id;
    l->req.client_addr = "127.0.0.1";
    return &l->req;
}

void http_req_free_local(http_req *req)
{
    if (!req) return;
    local_req *l = (local_req *)req; /* req is the first member */
    http_impl_release(&l->impl);
    free(l->method);
    free(l->target);
    free(l->path);
    free(l->query);
    free(l->body);
    free(l);
}

/* ---- streaming routes -------------------------------------------------------- */

#define MAX_STREAM_ROUTERS 16

/* Public router -> its stream router. Written while routes are registered
 * (before any server starts), read at server start. */
static struct {
    http_router *pub, *stream;
} g_stream_routers[MAX_STREAM_ROUTERS];
static int g_n_stream_routers;
static pthread_mutex_t g_stream_mu = PTHREAD_MUTEX_INITIALIZER;

http_router *http_stream_router_of(http_router *pub, bool create)
{
    http_router *found = NULL;
    pthread_mutex_lock(&g_stream_mu);
    for (int i = 0; i < g_n_stream_routers && !found; i++)
        if (g_stream_routers[i].pub == pub) found = g_stream_routers[i].stream;
    if (!found && create) {
        if (g_n_stream_routers == MAX_STREAM_ROUTERS)
            ts_panic("http_route_stream: more than %d routers with streaming routes",
                     MAX_STREAM_ROUTERS);
        found = http_router_new();
        g_stream_routers[g_n_stream_routers].pub = pub;
        g_stream_routers[g_n_stream_routers].stream = found;
        g_n_stream_routers++;
    }
    pthread_mutex_unlock(&g_stream_mu);
    return found;
}

/* In the stream router: the server's probe hit this route. Route parameters
 * point into the dispatch's buffer: keep copies for the whole request. */
static void stream_probe_hit(http_req *req, http_resp *resp, void *ctx)
{
    (void)resp;
    struct http_req_impl *impl = req->impl;
    impl->probe_hit = ctx;
    impl->n_params = req->n_params;
    for (int i = 0; i < req->n_params; i++) {
        impl->param_names[i] = http_req_keep(impl, ts_strdup(req->param_names[i]));
        impl->param_values[i] = http_req_keep(impl, ts_strdup(req->param_values[i]));
    }
}

/* In the public router: the whole (buffered) body in one chunk; reached by
 * local dispatch (the server streams such requests before this could run). */
static void stream_buffered(http_req *req, http_resp *resp, void *ctx)
{
    const stream_route *sr = ctx;
    void *state = sr->h.begin(req, resp, sr->ctx);
    bool completed = false;
    if (http_resp_status(resp) == 0) {
        bool go = true;
        if (req->body_len && sr->h.body)
            go = sr->h.body(req, resp, state, req->body, req->body_len);
        if (go) {
            sr->h.end(req, resp, state);
            completed = true;
        }
    }
    if (http_resp_status(resp) == 0)
        http_problem(resp, 500, "internal-server-error", NULL, "the handler produced no response");
    if (sr->h.done) sr->h.done(state, completed);
}

void http_route_stream(http_router *r, const char *method, const char *pattern,
                       const http_stream_handler *h, void *ctx)
{
    if (!h || !h->begin || !h->end)
        ts_panic("http_route_stream: %s %s without begin or end", method ? method : "(null)",
                 pattern ? pattern : "(null)");
    stream_route *sr = ts_calloc(1, sizeof(*sr)); /* lives as long as the routers */
    sr->h = *h;
    sr->ctx = ctx;
    http_route(http_stream_router_of(r, true), method, pattern, stream_probe_hit, sr);
    http_route(r, method, pattern, stream_buffered, sr);
}

/* ---- streamed response bodies --------------------------------------------------- */

static void set_src(http_req *req, const body_src *src)
{
    struct http_req_impl *impl = req->impl;
    http_src_release(&impl->src);
    impl->src = *src;
}

void http_reply_fd(http_req *req, http_resp *resp, int status, const char *content_type, int fd,
                   uint64_t offset, uint64_t len)
{
    http_reply(resp, status, content_type, "", 0);
    body_src src = {.kind = SRC_FD, .status = status, .fd = fd, .offset = offset, .len = len};
    set_src(req, &src);
}

void http_reply_reader(http_req *req, http_resp *resp, int status, const char *content_type,
                       uint64_t size, http_body_reader read, void (*release)(void *cls), void *cls)
{
    http_reply(resp, status, content_type, "", 0);
    body_src src = {.kind = SRC_READER,
                    .status = status,
                    .fd = -1,
                    .len = size,
                    .read = read,
                    .release = release,
                    .cls = cls};
    set_src(req, &src);
}

body_src *http_src_current(struct http_req_impl *impl, const http_resp *resp)
{
    size_t len = 0;
    (void)http_resp_body(resp, &len);
    if (!impl || impl->src.kind == SRC_NONE) return NULL;
    if (impl->src.status != http_resp_status(resp) || len != 0) return NULL;
    return &impl->src;
}

char *http_local_stream_body(http_req *req, const http_resp *resp, size_t *len)
{
    body_src *src = http_src_current(req->impl, resp);
    if (!src) return NULL;
    size_t cap = 64 * 1024, n = 0;
    char *out = ts_malloc(cap + 1);
    for (;;) {
        if (n == cap) out = ts_realloc(out, (cap *= 2) + 1);
        long got;
        if (src->kind == SRC_FD) {
            uint64_t left = src->len - n;
            if (left == 0) break;
            size_t want = cap - n < left ? cap - n : (size_t)left;
            got = pread(src->fd, out + n, want, (off_t)(src->offset + n));
        } else {
            if (src->len != HTTP_SIZE_UNKNOWN && n >= src->len) break;
            got = src->read(src->cls, n, out + n, cap - n);
        }
        if (got <= 0) break;
        n += (size_t)got;
    }
    out[n] = '\0';
    *len = n;
    return out;
}
