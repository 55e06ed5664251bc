/* http_server.c: the libmicrohttpd glue. Owns the listen socket, collects the
 * request body under the size limit, builds the http_req a handler sees (raw
 * target, request id, client address), turns the http_resp into an MHD
 * response (a streamed body's: http_mhd.c), and keeps the counters. The
 * request object itself (accessors, local requests, streaming routes'
 * registration, streamed bodies) is http_request.c.
 *
 * Streaming (http.h): streaming routes live in a second, private router (the
 * "stream router") tied to the public one. When a request's headers are in,
 * the server dispatches it there first; a hit runs the route's begin and then
 * feeds it the body chunk by chunk. The public router holds an adapter under
 * the same pattern, so 405 answers list the method and local dispatch works.
 * Streamed response bodies (a file descriptor or a reader) hang off the
 * request until the response is built.
 *
 * TLS (http_tls.h): libmicrohttpd runs the TLS sessions (GnuTLS), the front
 * hands it each connection after its first byte (http_front.h), and nothing
 * is written on a connection's socket outside libmicrohttpd: a chunked body
 * over http.max_body gets its 413 once the body is in (read and dropped up
 * to DISCARD_LIMIT, then the connection is cut), and a body that stalls
 * (http.body_timeout) has its connection shut down without the 408. */
#include "libcommon/http_request.h"
#include "libcommon/http_body_watch.h"
#include "libcommon/http_front.h"
#include "libcommon/http_mhd.h"
#include "libcommon/http_tls.h"
#include "libcommon/http_upgrade.h"
#include "libcommon/http_workers.h"
#include "libcommon/buf.h"
#include "libcommon/log.h"
#include "libcommon/net_listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#define DEFAULT_MAX_BODY (1024 * 1024)
/* libmicrohttpd's per-connection pool: the request's header block and read
 * buffer live in it, and it is cleared for every request on a connection (a
 * 64 KiB pool cost 9% of the gateway's CPU in memset). 32 KiB takes a 16 KiB
 * header block (nginx's default allows 4 x 8 KiB header lines); larger blocks
 * get 431. Bodies are streamed out of it, so they are not bounded by it. */
#define CONN_MEMORY_LIMIT (32 * 1024)
/* What http_front.c lets through to libmicrohttpd: a head it can hold (see
 * above), of which the request line may take all but 1 KiB (long query
 * strings are the handlers' to refuse, with a message). */
#define FRONT_MAX_HEAD (16 * 1024)
#define FRONT_MAX_LINE (FRONT_MAX_HEAD - 1024)
#define DEFAULT_HEADER_TIMEOUT_MS 10000
#define DEFAULT_BODY_TIMEOUT_MS 60000
/* A streaming route that refused mid-body (or a request already answered
 * from its headers): the rest of the body is read and dropped up to this much
 * before the connection is cut. */
#define DISCARD_LIMIT (16 * 1024 * 1024)

struct http_server {
    struct MHD_Daemon *daemon;
    http_front *front; /* accepts, and judges each connection's first head */
    http_router *router;
    http_router *stream_router; /* NULL: no streaming routes */
    size_t max_body;
    http_body_watch *bodies; /* 408 for a body that stalls (http.body_timeout) */
    char server_header[80];
    int listen_fd;
    int shared_fd; /* http_server_share's listener, or -1 */
    int port;
    bool quiesced;
    http_tls tls;        /* cert_pem NULL: plain HTTP */
    atomic_int inflight; /* from the first header callback until MHD says done */
    void (*on_complete)(const http_req *req, int status, int64_t latency_us, void *ctx);
    void *on_complete_ctx;
    bool (*guard)(http_req *req, http_resp *resp, void *ctx);
    void *guard_ctx;
    http_workers *workers; /* which of libmicrohttpd's workers are in a handler */
    atomic_uint_fast64_t requests, s2xx, s3xx, s4xx, s5xx, too_large, latency_us;
};

/* One per request (MHD's con_cls): made when the request line arrives. */
typedef struct req_ctx {
    int64_t t0_us;
    char *raw_target;
    ts_buf body;
    size_t discarded;
    bool started, answered, counted;
    bool watched;       /* its body is in s->bodies (until claimed) */
    bool too_large;     /* TLS: a chunked body went over max_body; 413 at its end */
    const char *method; /* libmicrohttpd's, for the request's life */
    const char *url;
    http_body_entry body_watch;
    /* Streaming routes: the request lives across the body's chunks. */
    const stream_route *sr;
    void *sstate;
    bool sdone;
    http_resp *spending; /* body() stopped: sent once the body is in (MHD's rule) */
    http_req sreq;
    char *spath, *squery;
    char request_id[REQUEST_ID_MAX + 1];
    char client_addr[INET6_ADDRSTRLEN];
    struct http_req_impl impl;
} req_ctx;

/* ---- answering ------------------------------------------------------------- */

static void account(http_server *s, int status, int64_t dur)
{
    atomic_fetch_add(&s->requests, 1);
    if (status >= 500)
        atomic_fetch_add(&s->s5xx, 1);
    else if (status >= 400)
        atomic_fetch_add(&s->s4xx, 1);
    else if (status >= 300)
        atomic_fetch_add(&s->s3xx, 1);
    else if (status >= 200)
        atomic_fetch_add(&s->s2xx, 1);
    atomic_fetch_add(&s->latency_us, (uint64_t)(dur > 0 ? dur : 0));
}

static void fill_client_addr(struct MHD_Connection *conn, char *out, size_t size)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    ts_strlcpy(out, "", size);
    if (!ci || !ci->client_addr) return;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, out,
                  (socklen_t)size);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, out,
                  (socklen_t)size);
}

/* The request a handler (or on_complete) sees; path and query are the
 * caller's to free. */
static void build_req(req_ctx *rc, struct MHD_Connection *conn, const char *url, const char *method,
                      http_req *req, char **path, char **query)
{
    const char *target = rc->raw_target ? rc->raw_target : url;
    http_split_target(target, url, path, query);
    rc->impl.conn = conn;
    fill_client_addr(conn, rc->client_addr, sizeof(rc->client_addr));
    *req = (http_req){
        .method = method,
        .target = target,
        .path = *path,
        .query = *query,
        .body = rc->body.data ? rc->body.data : "",
        .body_len = rc->body.len,
        .request_id = rc->request_id,
        .client_addr = rc->client_addr,
        .impl = &rc->impl,
    };
}

/* The log context of a handler: the request id and, when the gateway forwarded
 * a caller, the caller's access key (log.h); cleared whole after the handler. */
static void log_ctx_enter(const req_ctx *rc, const http_req *req)
{
    tlog_ctx_request(rc->request_id);
    if (req) tlog_ctx_access_key(http_header(req, "X-Tessera-Caller-Access-Key"));
}

/* The request is answered: counters and on_complete. */
static void mark_answered(http_server *s, req_ctx *rc, const http_req *req, int status)
{
    rc->answered = true;
    int64_t dur = ts_now_mono_us() - rc->t0_us;
    account(s, status, dur);
    if (s->on_complete) {
        log_ctx_enter(rc, req);
        s->on_complete(req, status, dur, s->on_complete_ctx);
        tlog_ctx_clear();
    }
}

static enum MHD_Result send_resp(http_server *s, req_ctx *rc, struct MHD_Connection *conn,
                                 const http_req *req, http_resp *resp)
{
    size_t len = 0;
    const char *body = http_resp_body(resp, &len);
    body_src *src = http_src_current(&rc->impl, resp);
    struct MHD_Response *mr =
        src ? http_mhd_response(&rc->impl, src)
            : MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    http_src_release(&rc->impl.src); /* a replaced source goes unsent */
    if (!mr) {
        TLOG_ERROR("http response could not be created", "len=%zu", len);
        return MHD_NO;
    }
    const char *ct = http_resp_header(resp, "Content-Type");
    if (ct) MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE, ct);
    MHD_add_response_header(mr, "X-Request-ID", rc->request_id);
    MHD_add_response_header(mr, MHD_HTTP_HEADER_SERVER, s->server_header);
    const char *name, *value;
    for (size_t i = 0; http_resp_header_at(resp, i, &name, &value); i++) {
        if (MHD_add_response_header(mr, name, value) != MHD_YES)
            TLOG_WARN("http header dropped", "name=%s", name);
    }
    int status = http_resp_status(resp);
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)status, mr);
    if (status == 101 && rc->counted) { /* an upgraded stream is not a request in flight */
        rc->counted = false;
        atomic_fetch_sub(&s->inflight, 1);
    }
    MHD_destroy_response(mr);
    mark_answered(s, rc, req, status);
    return ret;
}

/* Refuse in the middle of the body, at once: libmicrohttpd cannot queue a
 * response before the body ended, so the problem answer is written on the
 * socket here, a duplicate of the socket lingers in the front (half-closed,
 * drained, closed when the client closes) and libmicrohttpd drops its own. */
static enum MHD_Result refuse_now(http_server *s, req_ctx *rc, struct MHD_Connection *conn,
                                  const char *url, const char *method, int status, const char *msg)
{
    ts_buf_free(&rc->body); /* on_complete sees no body */
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci &&
        !http_front_answer(s->front, ci->connect_fd, status, msg, rc->request_id, s->server_header))
        TLOG_DEBUG("http refusal not delivered", "status=%d request_id=%s", status, rc->request_id);
    http_req req;
    char *path, *query;
    build_req(rc, conn, url, method, &req, &path, &query);
    mark_answered(s, rc, &req, status);
    free(path);
    free(query);
    http_mhd_log_quiet_once(); /* its line about the MHD_NO says nothing new */
    return MHD_NO;
}

static enum MHD_Result answer_too_large(http_server *s, req_ctx *rc, struct MHD_Connection *conn,
                                        const char *url, const char *method)
{
    atomic_fetch_add(&s->too_large, 1);
    TLOG_INFO("http request body too large", "method=%s max_body=%zu request_id=%s", method,
              s->max_body, rc->request_id);
    ts_buf_free(&rc->body); /* on_complete sees no body */
    http_req req;
    char *path, *query;
    build_req(rc, conn, url, method, &req, &path, &query);
    http_resp *resp = http_resp_new();
    http_problem(resp, 413, "request-too-large", NULL,
                 "request body is larger than the limit of %zu bytes", s->max_body);
    enum MHD_Result ret = send_resp(s, rc, conn, &req, resp);
    http_resp_free(resp);
    free(path);
    free(query);
    return ret;
}

static enum MHD_Result handle(http_server *s, req_ctx *rc, struct MHD_Connection *conn,
                              const char *url, const char *method)
{
    http_req req;
    char *path, *query;
    build_req(rc, conn, url, method, &req, &path, &query);
    http_resp *resp = http_resp_new();

    log_ctx_enter(rc, &req);
    if (!s->guard || s->guard(&req, resp, s->guard_ctx))
        http_router_dispatch(s->router, &req, resp);
    if (http_resp_status(resp) == 0) {
        TLOG_ERROR("http handler set no response", "method=%s path=%s", method, path);
        http_problem(resp, 500, "internal-server-error", NULL, "the handler produced no response");
    }
    TLOG_DEBUG("http request", "method=%s status=%d dur_us=%lld", method, http_resp_status(resp),
               (long long)(ts_now_mono_us() - rc->t0_us));
    tlog_ctx_clear();

    enum MHD_Result ret = send_resp(s, rc, conn, &req, resp);
    http_resp_free(resp);
    free(path);
    free(query);
    return ret;
}

static bool content_length_over(const char *cl, size_t max)
{
    errno = 0;
    char *end;
    unsigned long long n = strtoull(cl, &end, 10);
    if (end == cl) return false; /* MHD rejects a malformed one itself */
    return errno == ERANGE || n > (unsigned long long)max;
}

/* ---- streaming requests --------------------------------------------------------- */

static void stream_params(req_ctx *rc)
{
    rc->sreq.n_params = rc->impl.n_params;
    for (int i = 0; i < rc->impl.n_params; i++) {
        rc->sreq.param_names[i] = rc->impl.param_names[i];
        rc->sreq.param_values[i] = rc->impl.param_values[i];
    }
}

/* Is this a streaming route's request? Then rc keeps the request (rc->sreq)
 * for the whole body. */
static bool stream_probe(http_server *s, req_ctx *rc, struct MHD_Connection *conn, const char *url,
                         const char *method)
{
    if (!s->stream_router) return false;
    build_req(rc, conn, url, method, &rc->sreq, &rc->spath, &rc->squery);
    http_resp *resp = http_resp_new();
    http_router_dispatch(s->stream_router, &rc->sreq, resp);
    http_resp_free(resp);
    rc->sr = rc->impl.probe_hit;
    if (!rc->sr) {
        free(rc->spath);
        free(rc->squery);
        rc->spath = rc->squery = NULL;
        return false;
    }
    return true;
}

/* The response the stream callbacks set (a 500 when they set none). */
static enum MHD_Result stream_answer(http_server *s, req_ctx *rc, struct MHD_Connection *conn,
                                     http_resp *resp, const char *what)
{
    if (http_resp_status(resp) == 0) {
        TLOG_ERROR("http stream handler set no response", "step=%s path=%s", what, rc->spath);
        http_problem(resp, 500, "internal-server-error", NULL, "the handler produced no response");
    }
    stream_params(rc);
    return send_resp(s, rc, conn, &rc->sreq, resp);
}

static enum MHD_Result stream_begin(http_server *s, req_ctx *rc, struct MHD_Connection *conn)
{
    http_resp *resp = http_resp_new();
    stream_params(rc);
    log_ctx_enter(rc, &rc->sreq);
    if (!s->guard || s->guard(&rc->sreq, resp, s->guard_ctx))
        rc->sstate = rc->sr->h.begin(&rc->sreq, resp, rc->sr->ctx);
    else
        rc->sdone = true; /* refused before begin: no done() either */
    tlog_ctx_clear();
    enum MHD_Result ret = MHD_YES;
    if (http_resp_status(resp) != 0) ret = stream_answer(s, rc, conn, resp, "begin");
    http_resp_free(resp);
    return ret;
}

/* libmicrohttpd queues a response only before the body or after all of it:
 * when body() stops, the rest is read and dropped (up to DISCARD_LIMIT, then
 * the connection is cut) and its answer goes out at the end. */
static enum MHD_Result stream_step(http_server *s, req_ctx *rc, struct MHD_Connection *conn,
                                   const char *data, size_t *size)
{
    enum MHD_Result ret = MHD_YES;
    if (rc->spending) {
        if (*size) {
            rc->discarded += *size;
            *size = 0;
            if (rc->discarded <= DISCARD_LIMIT) return MHD_YES;
            TLOG_INFO("http stream refused mid-body; closing", "path=%s request_id=%s", rc->spath,
                      rc->request_id);
            return MHD_NO;
        }
        ret = stream_answer(s, rc, conn, rc->spending, "body");
        http_resp_free(rc->spending);
        rc->spending = NULL;
        return ret;
    }
    http_resp *resp = http_resp_new();
    stream_params(rc);
    log_ctx_enter(rc, &rc->sreq);
    if (*size) {
        size_t n = *size;
        *size = 0;
        if (rc->sr->h.body && !rc->sr->h.body(&rc->sreq, resp, rc->sstate, data, n)) {
            rc->spending = resp;
            resp = NULL;
        }
    } else {
        rc->sr->h.end(&rc->sreq, resp, rc->sstate);
        ret = stream_answer(s, rc, conn, resp, "end");
    }
    tlog_ctx_clear();
    http_resp_free(resp);
    return ret;
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    (void)conn;
    req_ctx *rc = ts_calloc(1, sizeof(*rc));
    rc->t0_us = ts_now_mono_us();
    rc->raw_target = ts_strdup(uri ? uri : "");
    return rc;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    http_server *s = cls;
    req_ctx *rc = *con_cls;
    if (!rc) return;
    if (rc->watched) {
        http_body_watch_remove(s->bodies, &rc->body_watch);
        if (rc->body_watch.state == HTTP_BODY_EXPIRED && !rc->answered) {
            http_req req;
            char *path, *query;
            build_req(rc, conn, rc->url, rc->method, &req, &path, &query);
            mark_answered(s, rc, &req, 408); /* answered by expire_body */
            free(path);
            free(query);
        }
    }
    if (rc->counted) atomic_fetch_sub(&s->inflight, 1);
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && toe != MHD_REQUEST_TERMINATED_CLIENT_ABORT)
        TLOG_DEBUG("http request ended early", "code=%d answered=%d", (int)toe, rc->answered);
    if (rc->sr && !rc->sdone && rc->sr->h.done) {
        rc->sdone = true;
        rc->sr->h.done(rc->sstate, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK && rc->answered);
    }
    free(rc->spath);
    free(rc->squery);
    http_resp_free(rc->spending);
    if (rc->impl.upgrade) http_upgrade_unref(rc->impl.upgrade);
    http_impl_release(&rc->impl);
    free(rc->raw_target);
    ts_buf_free(&rc->body);
    free(rc);
    *con_cls = NULL;
}

/* The worker that serves conn (http_workers.h). */
static unsigned worker_of(const http_server *s, struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    return http_workers_of(s->workers, ci ? ci->connect_fd : -1);
}

/* Watch the body of a request that has one (http_body_watch.h). */
static void watch_body(http_server *s, req_ctx *rc, struct MHD_Connection *conn)
{
    const char *cl =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    const char *te =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci || (!te && (!cl || strtoull(cl, NULL, 10) == 0))) return;
    http_body_watch_add(s->bodies, &rc->body_watch, ci->connect_fd, rc);
    rc->watched = true;
}

/* A watched body stalled (the watch's thread, under its lock: the request
 * is not ended meanwhile): 408 on the connection; libmicrohttpd's side then
 * drops what still comes (serve) and on_completed counts the answer. */
static void expire_body(http_body_entry *e, void *ctx)
{
    http_server *s = ctx;
    req_ctx *rc = e->owner;
    TLOG_INFO("http request body too slow", "request_id=%s", rc->request_id);
    if (s->tls.cert_pem) { /* no answer outside the TLS session: libmicrohttpd sees the end */
        shutdown(e->fd, SHUT_RDWR);
        return;
    }
    if (!http_front_answer(s->front, e->fd, 408,
                           "request body not received in time (http.body_timeout)", rc->request_id,
                           s->server_header))
        TLOG_DEBUG("http 408 not delivered", "request_id=%s", rc->request_id);
}

/* A watched request's body: false when the watch answered it (what still
 * comes is dropped; *drop says whether to cut the connection). */
static bool body_ours(http_server *s, req_ctx *rc, size_t *size, enum MHD_Result *drop)
{
    if (!rc->watched) return true;
    if (*size) {
        if (http_body_watch_state(s->bodies, &rc->body_watch) != HTTP_BODY_EXPIRED) {
            if (rc->sr) http_body_watch_touch(s->bodies, &rc->body_watch);
            return true;
        }
        rc->discarded += *size;
        *size = 0;
        *drop = rc->discarded > DISCARD_LIMIT ? MHD_NO : MHD_YES;
        return false;
    }
    rc->watched = false; /* complete: claimed, or answered by the watch */
    if (http_body_watch_claim(s->bodies, &rc->body_watch)) return true;
    rc->watched = true; /* on_completed counts the 408 */
    *drop = MHD_NO;
    return false;
}

/* A chunked body over max_body on a TLS listener: the rest is read and
 * dropped (up to DISCARD_LIMIT, then the connection is cut) and the 413 goes
 * out at its end, through libmicrohttpd (answer_too_large counts it). */
static enum MHD_Result too_large_later(http_server *s, req_ctx *rc, size_t n)
{
    if (!rc->too_large) {
        rc->too_large = true;
        ts_buf_free(&rc->body);
    }
    rc->discarded += n;
    if (rc->discarded <= DISCARD_LIMIT) return MHD_YES;
    atomic_fetch_add(&s->too_large, 1);
    TLOG_INFO("http request body too large; closing", "max_body=%zu request_id=%s", s->max_body,
              rc->request_id);
    return MHD_NO;
}

static enum MHD_Result serve(http_server *s, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *upload_data, size_t *upload_data_size,
                             void **con_cls)
{
    req_ctx *rc = *con_cls;
    if (!rc) *con_cls = rc = on_uri(s, url, conn);

    if (rc->answered) { /* 413 sent from the headers alone, or a stream refused early */
        rc->discarded += *upload_data_size;
        *upload_data_size = 0;
        if (rc->sr && rc->discarded > DISCARD_LIMIT) return MHD_NO;
        return MHD_YES;
    }
    enum MHD_Result drop;
    if (rc->started && !body_ours(s, rc, upload_data_size, &drop)) return drop;
    if (rc->sr) return stream_step(s, rc, conn, upload_data, upload_data_size);
    if (!rc->started) {
        rc->started = true;
        rc->counted = true;
        rc->method = method;
        rc->url = url;
        atomic_fetch_add(&s->inflight, 1);
        http_req_pick_id(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-ID"),
                         rc->request_id);
        if (stream_probe(s, rc, conn, url, method)) {
            enum MHD_Result r = stream_begin(s, rc, conn);
            if (!rc->answered) watch_body(s, rc, conn);
            return r;
        }
        const char *cl =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && content_length_over(cl, s->max_body))
            return answer_too_large(s, rc, conn, url, method);
        watch_body(s, rc, conn);
        return MHD_YES;
    }
    if (rc->too_large && !*upload_data_size) return answer_too_large(s, rc, conn, url, method);
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (rc->too_large || rc->body.len + n > s->max_body) { /* chunked */
            if (s->tls.cert_pem) return too_large_later(s, rc, n);
            atomic_fetch_add(&s->too_large, 1);
            TLOG_INFO("http request body too large", "method=%s max_body=%zu request_id=%s", method,
                      s->max_body, rc->request_id);
            char msg[128];
            snprintf(msg, sizeof(msg), "request body is larger than the limit of %zu bytes",
                     s->max_body);
            return refuse_now(s, rc, conn, url, method, 413, msg);
        }
        ts_buf_append(&rc->body, upload_data, n);
        return MHD_YES;
    }
    return handle(s, rc, conn, url, method);
}

/* Every call of a handler runs on a worker's thread; while it runs, that
 * worker serves none of its other connections (front_handoff steers new ones
 * elsewhere). */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    http_server *s = cls;
    unsigned w = worker_of(s, conn);
    http_workers_enter(s->workers, w);
    enum MHD_Result r = serve(s, conn, url, method, upload_data, upload_data_size, con_cls);
    http_workers_leave(s->workers, w);
    return r;
}

/* ---- start and stop --------------------------------------------------------- */

/* The front judged a connection's first head fine: libmicrohttpd takes it. */
static void front_handoff(int fd, const struct sockaddr *addr, socklen_t addr_len, void *ctx)
{
    http_server *s = ctx;
    fd = http_workers_steer(s->workers, fd);
    if (MHD_add_connection(s->daemon, fd, addr, addr_len) != MHD_YES) /* it closed fd */
        TLOG_WARN("http connection dropped: libmicrohttpd did not take it", "error=\"%s\"",
                  strerror(errno));
}

/* The front answered a connection itself (400, 408, 414, 431, 501, 505). */
static void front_refused(int status, void *ctx)
{
    account(ctx, status, 0);
}

/* The server record for opts around the loaded TLS material and the
 * listening socket (both its own from here on), with its workers. */
static http_server *server_new(const http_server_opts *opts, http_router *router, http_tls tls,
                               int fd, unsigned threads)
{
    http_server *s = ts_calloc(1, sizeof(*s));
    s->tls = tls;
    s->router = router;
    s->stream_router = http_stream_router_of(router, false);
    s->listen_fd = fd;
    s->shared_fd = -1;
    s->on_complete = opts->on_complete;
    s->on_complete_ctx = opts->on_complete_ctx;
    s->guard = opts->guard;
    s->guard_ctx = opts->guard_ctx;
    s->max_body = opts->max_body ? opts->max_body : DEFAULT_MAX_BODY;
    snprintf(s->server_header, sizeof(s->server_header), "tessera-%s",
             opts->service && *opts->service ? opts->service : "http");
    s->workers = http_workers_new(threads);
    return s;
}

/* libmicrohttpd's daemon. It gets connections from the front (http_front.h),
 * not a listening socket of its own. Under TLS it keeps the PEM pointers:
 * they live in s until stop. */
static bool start_daemon(http_server *s, const http_server_opts *opts, unsigned threads,
                         ts_err *err)
{
    unsigned timeout = opts->conn_timeout_s > 0 ? (unsigned)opts->conn_timeout_s : 60;
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG |
                     MHD_USE_NO_LISTEN_SOCKET | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_ALLOW_UPGRADE /* http_upgrade.c */;
    struct MHD_OptionItem tls_opts[] = {
        {MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls.key_pem},
        {MHD_OPTION_HTTPS_MEM_CERT, 0, s->tls.cert_pem},
        {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)HTTP_TLS_PRIORITIES},
        {MHD_OPTION_END, 0, NULL},
    };
    if (s->tls.cert_pem) flags |= MHD_USE_TLS;
    s->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, http_mhd_log, s,
        MHD_OPTION_ARRAY, s->tls.cert_pem ? tls_opts : &tls_opts[TS_ARRAY_LEN(tls_opts) - 1],
        MHD_OPTION_THREAD_POOL_SIZE, threads > 1 ? threads : 0u, MHD_OPTION_CONNECTION_TIMEOUT,
        timeout, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY_LIMIT,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, s, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_END);
    if (s->daemon) return true;
    if (s->tls.cert_pem)
        ts_err_set(err,
                   "listen %s: libmicrohttpd did not start TLS with http.tls_cert %s and "
                   "http.tls_key %s (the key does not match the certificate, or GnuTLS "
                   "cannot use them: see its log line)",
                   opts->listen, opts->tls_cert_file, opts->tls_key_file);
    else
        ts_err_set(err, "listen %s: libmicrohttpd did not start (see its log line)", opts->listen);
    return false;
}

/* The front that reads each connection's first head (http_front.h). */
static bool start_front(http_server *s, const http_server_opts *opts, int header_ms, ts_err *err)
{
    http_front_opts fo = {
        .listen_fd = s->listen_fd,
        .header_timeout_ms = header_ms,
        .tls = s->tls.cert_pem != NULL,
        .limits = {.max_line = FRONT_MAX_LINE, .max_head = FRONT_MAX_HEAD},
        .server = s->server_header,
        .handoff = front_handoff,
        .refused = front_refused,
        .ctx = s,
    };
    s->front = http_front_start(&fo, err);
    if (!s->front) ts_err_prefix(err, "listen %s", opts->listen);
    return s->front != NULL;
}

/* The start-up steps in order: TLS material, the listener, the server record
 * and its workers, the body watch, libmicrohttpd's daemon, the front. A
 * failure stops what the steps before it started (http_server_stop). */
http_server *http_server_start(const http_server_opts *opts, http_router *router, ts_err *err)
{
    MHD_set_panic_func(http_mhd_panic, NULL);
    if (!opts || !router) {
        ts_err_set(err, "http server: no options or no router");
        return NULL;
    }
    http_tls tls;
    if (!http_tls_load(opts->tls_cert_file, opts->tls_key_file, &tls, err)) return NULL;
    int fd = net_listen_open(opts->listen, err);
    if (fd < 0) {
        http_tls_free(&tls);
        return NULL;
    }
    unsigned threads = opts->threads > 1 ? (unsigned)opts->threads : 1;
    http_server *s = server_new(opts, router, tls, fd, threads);
    int header_ms =
        opts->header_timeout_ms > 0 ? opts->header_timeout_ms : DEFAULT_HEADER_TIMEOUT_MS;
    int body_ms = opts->body_timeout_ms > 0 ? opts->body_timeout_ms : DEFAULT_BODY_TIMEOUT_MS;
    s->bodies = http_body_watch_start((int64_t)body_ms * 1000, expire_body, s, err);
    if (!s->bodies || !start_daemon(s, opts, threads, err) ||
        !start_front(s, opts, header_ms, err)) {
        http_server_stop(s);
        return NULL;
    }
    s->port = net_bound_port(s->listen_fd);
    TLOG_INFO("http listening",
              "listen=%s port=%d tls=%s threads=%u max_body=%zu header_timeout_ms=%d "
              "body_timeout_ms=%lld",
              opts->listen, s->port, s->tls.cert_pem ? "on" : "off", threads, s->max_body,
              header_ms, (long long)body_ms);
    return s;
}

int http_server_port(const http_server *s)
{
    return s->port;
}

bool http_server_tls(const http_server *s)
{
    return s->tls.cert_pem != NULL;
}

bool http_server_share(http_server *s, const char *addr, ts_err *err)
{
    ts_assert(s->shared_fd < 0); /* at most once */
    int fd = net_listen_open_shared(addr, err);
    if (fd < 0) return false;
    if (!http_front_add_listener(s->front, fd, err)) {
        close(fd);
        return false;
    }
    s->shared_fd = fd;
    return true;
}

void http_server_quiesce(http_server *s)
{
    if (!s || s->quiesced) return;
    s->quiesced = true;
    http_front_quiesce(s->front);
    http_events_end_all(); /* open event streams would hold the drain */
    /* The front's thread may still look at the fd until stop: shut it down now
     * (no more connections are accepted, connects are refused), close it then. */
    shutdown(s->listen_fd, SHUT_RDWR);
    if (s->shared_fd >= 0) shutdown(s->shared_fd, SHUT_RDWR);
    TLOG_INFO("http quiesced", "port=%d inflight=%d", s->port, http_server_inflight(s));
}

int http_server_inflight(const http_server *s)
{
    return atomic_load(&((http_server *)s)->inflight);
}

void http_server_stop(http_server *s)
{
    if (!s) return;
    http_body_watch_stop(s->bodies); /* before the front it answers through */
    http_front_stop(s->front);
    if (s->daemon) MHD_stop_daemon(s->daemon);
    http_body_watch_free(s->bodies);
    close(s->listen_fd);
    if (s->shared_fd >= 0) close(s->shared_fd);
    http_workers_free(s->workers);
    http_tls_free(&s->tls);
    free(s);
}

void http_server_get_stats(const http_server *cs, http_server_stats *out)
{
    http_server *s = (http_server *)cs;
    out->requests = atomic_load(&s->requests);
    out->status_2xx = atomic_load(&s->s2xx);
    out->status_3xx = atomic_load(&s->s3xx);
    out->status_4xx = atomic_load(&s->s4xx);
    out->status_5xx = atomic_load(&s->s5xx);
    out->body_too_large = atomic_load(&s->too_large);
    out->latency_us_sum = atomic_load(&s->latency_us);
    out->steered = http_workers_steered(s->workers);
}
