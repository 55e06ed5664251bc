/* http.h: the HTTP server every service embeds (libmicrohttpd underneath),
 * with routing, JSON bodies (jansson), request ids, body-size limits and
 * problem-JSON errors in Backend.AI's shape:
 *   {"type": "https://api.backend.ai/probs/<kind>", "title": "...", "msg": "..."}
 *
 * Handlers run on the server's worker threads and fill a response. */
#ifndef TESSERA_HTTP_H
#define TESSERA_HTTP_H

#include "libcommon/common.h"

#include <jansson.h>

#define HTTP_MAX_PARAMS 8

typedef struct http_req {
    const char *method; /* "GET" */
    const char *target; /* raw request target as sent: "/a%20b?x=1" */
    const char *path;   /* decoded path without query: "/a b" */
    const char *query;  /* raw query without '?', or "" */
    const char *body;   /* NUL-terminated copy; may hold NULs inside */
    size_t body_len;
    const char *request_id;  /* X-Request-ID when sane, else a fresh UUID */
    const char *client_addr; /* "127.0.0.1" */
    const char *service;     /* the internal caller the server's guard verified
                                ("gateway"), or NULL (svcauth.h) */
    /* The handler chain's own per-request slot: NULL when the request
     * arrives; the server never reads or frees it. on_complete sees what the
     * handler left there, so whoever sets it releases it, at the latest there
     * (the gateway keeps the verified caller there for its access record). */
    void *local;
    /* The prefix the route was reached under (http_router_mount: "/func"),
     * with path and target as the route sees them (without it); NULL when
     * reached directly. Set for the handler only. */
    const char *mount;
    int n_params; /* route parameters ({name} segments), decoded */
    const char *param_names[HTTP_MAX_PARAMS];
    const char *param_values[HTTP_MAX_PARAMS];
    void *impl; /* server internals */
} http_req;

typedef struct http_resp http_resp;

typedef void (*http_handler)(http_req *req, http_resp *resp, void *ctx);

/* Request accessors. Header names are case-insensitive. */
const char *http_header(const http_req *req, const char *name);
const char *http_param(const http_req *req, const char *name);
/* Decoded query argument, or NULL. */
const char *http_query_arg(const http_req *req, const char *name);
/* Parse the body as a JSON object; on failure sends a 400 problem and returns
 * NULL (the handler just returns). Caller owns the result (json_decref). */
json_t *http_json_body(http_req *req, http_resp *resp);

/* Responses. Calling more than one of these replaces the earlier one. */
void http_reply(http_resp *resp, int status, const char *content_type, const void *body,
                size_t len);
/* Takes ownership of body (json_decref'd). */
void http_reply_json(http_resp *resp, int status, json_t *body);
/* Problem JSON; kind is the last part of the type URL ("invalid-api-params"). */
void http_problem(http_resp *resp, int status, const char *kind, const char *title, const char *fmt,
                  ...) TS_PRINTF(5, 6);
void http_set_header(http_resp *resp, const char *name, const char *value);

/* The reason phrase of an HTTP status ("Not Found"); a generic one for codes
 * the platform does not answer with. */
const char *http_status_text(int status);

/* The problem body as a JSON object (also used by the gateway when relaying). */
json_t *http_problem_json(const char *kind, const char *title, const char *msg);

/* Router: exact segments and {name} parameters; "*" as the method matches any.
 * No match: 404 problem; path matches but not the method: 405 problem with Allow. */
typedef struct http_router http_router;
http_router *http_router_new(void);
void http_router_free(http_router *r);
void http_route(http_router *r, const char *method, const char *pattern, http_handler h, void *ctx);
/* Serve every route of r also under prefix (one segment, e.g. "/func"): a
 * request whose path is not a route but is prefix + a route's path reaches
 * that route's handler with req->mount = prefix, and req->path and
 * req->target without the prefix (both are restored when it returns). A
 * route's own path wins over a mounted one. Buffered routes only (the
 * streaming routes' router has no mounts). At most HTTP_MAX_MOUNTS; before
 * the server starts. */
#define HTTP_MAX_MOUNTS 4
void http_router_mount(http_router *r, const char *prefix);
/* Dispatch a request (the server calls this; tests call it directly). */
void http_router_dispatch(http_router *r, http_req *req, http_resp *resp);

/* ---- streaming: large request and response bodies ---------------------------
 *
 * Request bodies. A route registered with http_route_stream gets its body in
 * chunks as they arrive instead of buffered (http.max_body does not apply to
 * it), for uploads of any size. The server calls, on one worker thread:
 *   begin(req, resp, ctx) once the headers are in (req->body is empty; route
 *       parameters, headers and query work). It returns the request's state.
 *       Setting a response here refuses the request before its body is read
 *       (a body still on the way is dropped, or the connection closed).
 *   body(req, resp, state, data, len) per chunk; false stops: the handler has
 *       set a response, which is sent now (the rest of the body is dropped).
 *   end(req, resp, state) once the whole body arrived: set the response.
 *   done(state, completed) always, exactly once, at the very end (completed:
 *       the response went out in full); frees the state. May be NULL.
 * Each of begin, body and end gets a response of its own: headers set in one
 * without a status set do not carry over to the next; set them with the
 * response that goes out (tessera-vfolder's tus PATCH sets its Tus-* and
 * CORS headers in body() on a refusal and in end()).
 * Streaming routes must be registered before the server starts. Dispatched
 * without a server (http_router_dispatch, e.g. on an http_req_new_local), the
 * same callbacks run on the buffered body in one chunk. */
typedef struct http_stream_handler {
    void *(*begin)(http_req *req, http_resp *resp, void *ctx);
    bool (*body)(http_req *req, http_resp *resp, void *state, const char *data, size_t len);
    void (*end)(http_req *req, http_resp *resp, void *state);
    void (*done)(void *state, bool completed);
} http_stream_handler;
void http_route_stream(http_router *r, const char *method, const char *pattern,
                       const http_stream_handler *h, void *ctx);

/* Response bodies read while sending, after the handler returned (files of any
 * size, archives generated on the fly). Headers set with http_set_header go
 * out with them. The source belongs to the request; it is released once the
 * response is done (or at http_req_free_local). A later http_reply* or
 * http_problem with a body replaces it (the source is released unsent).
 *
 * len bytes of fd from offset (sendfile(2) where the kernel allows). The server
 * owns fd from this call on and closes it. */
void http_reply_fd(http_req *req, http_resp *resp, int status, const char *content_type, int fd,
                   uint64_t offset, uint64_t len);

/* A body produced by read(cls, pos, buf, max): the bytes written into buf
 * (> 0), 0 at the end, -1 on an error (the connection is cut: the client sees
 * a short body). size is the total or HTTP_SIZE_UNKNOWN (chunked encoding).
 * release(cls) is called once, sent or not (may be NULL). */
#define HTTP_SIZE_UNKNOWN UINT64_MAX
typedef long (*http_body_reader)(void *cls, uint64_t pos, char *buf, size_t max);
void http_reply_reader(http_req *req, http_resp *resp, int status, const char *content_type,
                       uint64_t size, http_body_reader read, void (*release)(void *cls), void *cls);

/* ---- event streams (server-sent events, text/event-stream) ------------------
 *
 * A response that stays open and carries events as other threads produce
 * them, without holding a worker thread while it waits: when nothing is
 * queued, the connection is suspended (libmicrohttpd's suspend/resume) and
 * its worker serves its other connections; http_events_send resumes it.
 *
 * http_reply_events answers 200 text/event-stream (Cache-Control: no-cache,
 * X-Accel-Buffering: no) and returns the stream, held twice: by the response
 * (until the connection ends) and by the caller, who keeps it (e.g. in a
 * hub that a consumer thread walks) and gives it up with
 * http_events_release. All functions below may be called from any thread.
 *
 * A suspended connection does not notice that its client left; the owner
 * calls http_events_alive now and then (every second or so): it checks the
 * socket for a hang-up and, when the client is gone, ends the response, so
 * the connection is closed and freed. A comment (keep-alive) sent every ~15 s
 * also makes a dead peer's write fail. Events queued beyond
 * HTTP_EVENTS_MAX_QUEUED bytes (a client that does not read) end the stream.
 * A stream whose server quiesces (shutdown) is ended at once.
 *
 * Dispatched without a server (http_req_new_local), the body holds what was
 * queued before the handler returned (http_local_stream_body). */
#define HTTP_EVENTS_MAX_QUEUED (1024 * 1024)
typedef struct http_event_stream http_event_stream;
http_event_stream *http_reply_events(http_req *req, http_resp *resp);
/* Queue "event: <event>\ndata: <data>\n\n" (event NULL: no event line; data
 * one line, e.g. compact JSON) and wake the connection. False when the
 * stream is over (client gone, ended, or the queue full: then it ends). */
bool http_events_send(http_event_stream *es, const char *event, const char *data) TS_MUST_CHECK;
/* Queue a comment line ": <text>" (keep-alive). False as for send. */
bool http_events_comment(http_event_stream *es, const char *text) TS_MUST_CHECK;
/* End the stream once what is queued went out. */
void http_events_end(http_event_stream *es);
/* False once the stream is over: its response finished or failed, it was
 * ended, or its client hung up (noticed here: the stream is then ended). */
bool http_events_alive(http_event_stream *es) TS_MUST_CHECK;
/* The caller's reference; after this the caller must not use es. */
void http_events_release(http_event_stream *es);
/* Event streams open now in this process (all servers). */
int http_events_open_count(void);
/* End every open stream (the server calls it when it quiesces). */
void http_events_end_all(void);

/* For handler tests without a server: the streamed body of a local request's
 * response read to the end (heap, NUL-terminated; *len its length), or NULL
 * when the response has no streamed body. */
char *http_local_stream_body(http_req *req, const http_resp *resp, size_t *len);

/* ---- upgraded connections (WebSocket) ------------------------------------------------
 *
 * A handler that accepts an upgrade (after its own checks: ws.h's
 * ws_handshake_check for a WebSocket) answers with http_reply_upgrade: a 101
 * with the headers set on resp (Upgrade, Sec-WebSocket-Accept, ...; the
 * server adds Connection: Upgrade). Once the 101 went out, the server calls
 * on_upgraded on one of its worker threads with the connection's socket (fd),
 * the bytes the client sent after its request (extra), cls, and the handle.
 * on_upgraded must return at once: the connection is the callee's from then
 * on, in a thread of its own (it must not hold a worker). It ends it with
 * http_upgraded_close(handle), exactly once, from any thread; fd is not to be
 * closed or used after that. release(cls) is called instead of on_upgraded
 * when the upgrade never happens (another reply replaced it, the client went
 * away first, a local request); may be NULL. Only on a server started with
 * upgrades (every http_server is). On a TLS listener fd is one end of a
 * socket pair (AF_UNIX) whose other end libmicrohttpd carries over the TLS
 * session: read, write, poll and shutdown work as on the TCP socket; TCP
 * socket options do not apply (setting them fails harmlessly). */
typedef struct http_upgraded http_upgraded;
typedef void (*http_on_upgraded)(int fd, const char *extra, size_t extra_len, void *cls,
                                 http_upgraded *handle);
void http_reply_upgrade(http_req *req, http_resp *resp, http_on_upgraded on_upgraded,
                        void (*release)(void *cls), void *cls);
void http_upgraded_close(http_upgraded *handle);

typedef struct http_server_opts {
    const char *listen; /* "127.0.0.1:8080" or ":8080"; port 0 picks a free one */
    size_t max_body;    /* larger bodies get 413 problem JSON */
    int threads;        /* worker threads (>= 1) */
    int conn_timeout_s; /* idle connection timeout */
    /* A connection's first request head must be complete within this, else
     * 408 (0: 10 s); a buffered request body within this of its head, else
     * 408 (0: 60 s; streaming routes have only the idle timeout). Malformed
     * heads get 400/414/431/501/505 problem JSON at once (http_front.h). */
    int header_timeout_ms;
    int body_timeout_ms;
    const char *service; /* for logs and the Server header */
    /* PEM files (http_tls.h): both set, the listener speaks TLS only; both
     * NULL or empty, plain HTTP; anything else, or a file that is not PEM,
     * and start fails saying which. Under TLS the first request head is not
     * judged by the front (http_front.h) and header_timeout does not apply
     * after the first byte: libmicrohttpd parses the heads, and its idle
     * timeout (conn_timeout_s) closes slow ones. */
    const char *tls_cert_file;
    const char *tls_key_file;
    /* Called after each response is queued (status, handling time), on the
     * worker thread, with the request still valid; may be NULL. */
    void (*on_complete)(const http_req *req, int status, int64_t latency_us, void *ctx);
    void *on_complete_ctx;
    /* Called before routing for every request, with the whole body (a
     * streaming route's request: before its body, with an empty one); false:
     * refused, resp holds the answer and no handler runs. May be NULL. The
     * services use svcauth_guard (svcauth.h). */
    bool (*guard)(http_req *req, http_resp *resp, void *ctx);
    void *guard_ctx;
} http_server_opts;

typedef struct http_server http_server;

http_server *http_server_start(const http_server_opts *opts, http_router *router, ts_err *err);
/* The port actually bound (useful with port 0). */
int http_server_port(const http_server *s);
/* Whether the listener speaks TLS (http_server_opts.tls_cert_file). */
bool http_server_tls(const http_server *s) TS_MUST_CHECK;
/* Listen on addr too, an address other processes share (SO_REUSEPORT: the
 * kernel spreads new connections over every process listening on it; see
 * net_listen_open_shared), e.g. once the service is ready. At most once. */
bool http_server_share(http_server *s, const char *addr, ts_err *err) TS_MUST_CHECK;
/* Stop accepting new connections (on every address); in-flight requests finish. */
void http_server_quiesce(http_server *s);
/* Requests being handled right now. */
int http_server_inflight(const http_server *s);
void http_server_stop(http_server *s);

/* Counters for /metrics: per status class and total latency. */
typedef struct http_server_stats {
    uint64_t requests, status_2xx, status_3xx, status_4xx, status_5xx;
    uint64_t body_too_large;
    uint64_t latency_us_sum;
    uint64_t steered; /* new connections moved off a worker busy in a handler */
} http_server_stats;
void http_server_get_stats(const http_server *s, http_server_stats *out);

/* For tests and for code that builds responses without a server. */
http_resp *http_resp_new(void);
void http_resp_free(http_resp *resp);
int http_resp_status(const http_resp *resp);
const char *http_resp_body(const http_resp *resp, size_t *len);
const char *http_resp_header(const http_resp *resp, const char *name);
/* The i-th header set with http_set_header (in order); false past the last. */
bool http_resp_header_at(const http_resp *resp, size_t i, const char **name,
                         const char **value) TS_MUST_CHECK;

/* A request built without a server, for handler tests and in-process calls:
 * target is raw ("/a%20b?x=1"), headers a NULL-terminated list of
 * "Name: value" strings or NULL, body may be NULL. http_header and
 * http_query_arg work on it as on a served request. */
http_req *http_req_new_local(const char *method, const char *target, const char *const *headers,
                             const void *body, size_t body_len);
void http_req_free_local(http_req *req);

#endif
