/* streams.c: Backend.AI's streams in the gateway (streams.h). */
#include "streams.h"

#include "libcommon/log.h"
#include "libcommon/ws.h"
#include "session_apps.h"
#include "stream_activity.h"
#include "streams_exec.h"
#include "verify.h"

#include <poll.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TERM_APP "ttyd"
#define CONNECT_TIMEOUT_MS 10000
#define TUNNEL_CHUNK (64 * 1024)

typedef enum stream_kind { ST_PTY, ST_EXEC, ST_TUNNEL } stream_kind;

typedef struct stream {
    gateway *gw;
    stream_kind kind;
    session_app app;
    ws_conn *client; /* on the upgraded socket (WS_SERVER) */
    http_upgraded *handle;
    ws_conn *term;       /* ST_PTY: tessera-term's /ws */
    int tcp;             /* ST_TUNNEL: the app's port */
    exec_ctl ctl;        /* ST_EXEC */
    stream_activity act; /* the idle checker's (stream_activity.h) */
    struct stream *next;
} stream;

/* Every open stream, for the interrupt route and for streams_stop. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static stream *g_list;
static atomic_int g_open; /* reserved or running */
static atomic_bool g_stopping;

int streams_open(void)
{
    return atomic_load(&g_open);
}

static void _free_stream(stream *s)
{
    ws_conn_free(s->term);
    if (s->tcp >= 0) close(s->tcp);
    exec_ctl_destroy(&s->ctl);
    free(s);
    atomic_fetch_sub(&g_open, 1);
}

/* ---- the relays ------------------------------------------------------------------------ */

static bool _send_json(ws_conn *c, json_t *o)
{
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    bool ok = text && ws_conn_send(c, WSF_TEXT, text, strlen(text));
    free(text);
    return ok;
}

static bool _pty_error(ws_conn *c, const char *msg)
{
    return _send_json(c, json_pack("{s:s, s:s}", "type", "error", "data", msg));
}

static ws_conn *_pty_open(const stream *s)
{
    ts_err err = {{0}};
    ws_conn *t = ws_client_open(s->app.host, s->app.host_port, "/ws", CONNECT_TIMEOUT_MS,
                                STREAMS_MAX_MESSAGE, &err);
    if (!t)
        TLOG_WARN("pty stream: the terminal app cannot be reached", "session=%s error=\"%s\"",
                  s->app.sid, err.msg);
    return t;
}

/* One client message of the pty protocol: false ends the stream. */
static bool _pty_message(stream *s, const uint8_t *d, size_t n)
{
    json_t *o = json_loadb((const char *)d, n, 0, NULL);
    const char *type = json_string_value(json_object_get(o, "type"));
    bool ok = true;
    if (!json_is_object(o) || !type) {
        ok = _pty_error(s->client, "a message is a JSON object with a \"type\": stdin, resize, "
                                   "ping or restart");
    } else if (strcmp(type, "stdin") == 0) {
        const char *chars = json_string_value(json_object_get(o, "chars"));
        size_t clen = chars ? strlen(chars) : 0, got = 0;
        uint8_t *bin = ts_malloc(clen + 1);
        if (!chars || sodium_base642bin(bin, clen + 1, chars, clen, NULL, &got, NULL,
                                        sodium_base64_VARIANT_ORIGINAL) != 0)
            ok = _pty_error(s->client, "stdin: chars must be base64");
        else if (got && !ws_conn_send(s->term, WSF_BINARY, bin, got))
            ok = false;
        free(bin);
    } else if (strcmp(type, "resize") == 0) {
        json_int_t rows = json_integer_value(json_object_get(o, "rows"));
        json_int_t cols = json_integer_value(json_object_get(o, "cols"));
        if (rows < 1 || rows > 999 || cols < 1 || cols > 999) {
            ok = _pty_error(s->client, "resize: rows and cols must be numbers from 1 to 999");
        } else {
            char m[32];
            int k = snprintf(m, sizeof(m), "\x01%lld,%lld", (long long)cols, (long long)rows);
            ok = ws_conn_send(s->term, WSF_TEXT, m, (size_t)k);
        }
    } else if (strcmp(type, "ping") == 0) {
        /* keeps the connection busy; nothing to answer */
    } else if (strcmp(type, "restart") == 0) {
        ws_conn *fresh = _pty_open(s);
        if (!fresh) {
            ok = _pty_error(s->client, "restart: the terminal app cannot be reached");
        } else {
            ws_conn_close(s->term, WSF_CLOSE_NORMAL, NULL);
            ws_conn_free(s->term);
            s->term = fresh;
        }
    } else {
        ok = _pty_error(s->client, "unknown message type: stdin, resize, ping or restart");
    }
    json_decref(o);
    return ok;
}

/* The pty's output as {"type": "out", "data": base64}. */
static bool _pty_out(stream *s, const uint8_t *d, size_t n)
{
    size_t blen = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL);
    char *b64 = ts_malloc(blen);
    sodium_bin2base64(b64, blen, d, n, sodium_base64_VARIANT_ORIGINAL);
    bool ok = _send_json(s->client, json_pack("{s:s, s:s}", "type", "out", "data", b64));
    free(b64);
    return ok;
}

typedef enum pump { PUMP_OK, PUMP_END } pump;

/* The buffered messages of c, each to on_msg; PUMP_END when c closed or broke
 * the protocol (a close answered on peer_close's side as well). */
static pump _pump(stream *s, ws_conn *c, bool from_client,
                  bool (*on_msg)(stream *s, int op, const uint8_t *d, size_t n))
{
    for (;;) {
        int op = 0, code = 0;
        const uint8_t *d;
        size_t n;
        ws_next r = ws_conn_next(c, &op, &d, &n, &code);
        if (r == WS_NEXT_NONE) return PUMP_OK;
        if (r == WS_NEXT_MESSAGE) {
            if (from_client) stream_activity_note(&s->act);
            if (!on_msg(s, op, d, n)) return PUMP_END;
            continue;
        }
        if (from_client)
            ws_conn_close(c, r == WS_NEXT_CLOSE ? WSF_CLOSE_NORMAL : code, NULL);
        else
            ws_conn_close(s->client, r == WS_NEXT_CLOSE ? WSF_CLOSE_NORMAL : WSF_CLOSE_INTERNAL,
                          NULL);
        return PUMP_END;
    }
}

static bool _pty_from_client(stream *s, int op, const uint8_t *d, size_t n)
{
    if (op != WSF_TEXT) return true;
    return _pty_message(s, d, n);
}

static bool _pty_from_term(stream *s, int op, const uint8_t *d, size_t n)
{
    (void)op;
    return n == 0 || _pty_out(s, d, n);
}

static void _serve_pty(stream *s)
{
    for (;;) {
        if (_pump(s, s->client, true, _pty_from_client) == PUMP_END) return;
        if (_pump(s, s->term, false, _pty_from_term) == PUMP_END) return;
        struct pollfd pf[2] = {{.fd = ws_conn_fd(s->client), .events = POLLIN},
                               {.fd = ws_conn_fd(s->term), .events = POLLIN}};
        if (poll(pf, 2, 1000) < 0) continue;
        if (atomic_load(&g_stopping)) {
            ws_conn_close(s->client, WSF_CLOSE_GOING_AWAY, "the gateway is stopping");
            return;
        }
        if ((pf[0].revents & (POLLIN | POLLHUP | POLLERR)) && !ws_conn_fill(s->client)) {
            (void)_pump(s, s->client, true, _pty_from_client);
            return;
        }
        if ((pf[1].revents & (POLLIN | POLLHUP | POLLERR)) && !ws_conn_fill(s->term)) {
            if (_pump(s, s->term, false, _pty_from_term) == PUMP_OK)
                ws_conn_close(s->client, WSF_CLOSE_NORMAL, "the shell ended");
            return;
        }
    }
}

static bool _tunnel_from_client(stream *s, int op, const uint8_t *d, size_t n)
{
    (void)op;
    size_t off = 0;
    while (off < n) {
        ssize_t k = send(s->tcp, d + off, n - off, MSG_NOSIGNAL);
        if (k <= 0) return false;
        off += (size_t)k;
    }
    return true;
}

static void _serve_tunnel(stream *s)
{
    uint8_t *buf = ts_malloc(TUNNEL_CHUNK);
    for (;;) {
        if (_pump(s, s->client, true, _tunnel_from_client) == PUMP_END) break;
        struct pollfd pf[2] = {{.fd = ws_conn_fd(s->client), .events = POLLIN},
                               {.fd = s->tcp, .events = POLLIN}};
        if (poll(pf, 2, 1000) < 0) continue;
        if (atomic_load(&g_stopping)) {
            ws_conn_close(s->client, WSF_CLOSE_GOING_AWAY, "the gateway is stopping");
            break;
        }
        if ((pf[0].revents & (POLLIN | POLLHUP | POLLERR)) && !ws_conn_fill(s->client)) {
            (void)_pump(s, s->client, true, _tunnel_from_client);
            break;
        }
        if (pf[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t k = recv(s->tcp, buf, TUNNEL_CHUNK, 0);
            if (k <= 0) {
                ws_conn_close(s->client, WSF_CLOSE_NORMAL, "the app closed the connection");
                break;
            }
            if (!ws_conn_send(s->client, WSF_BINARY, buf, (size_t)k)) break;
        }
    }
    free(buf);
}

static void *_stream_thread(void *arg)
{
    stream *s = arg;
    tlog_ctx_entity("session", s->app.sid);
    stream_activity_flush(&s->act, true);
    switch (s->kind) {
    case ST_PTY:
        _serve_pty(s);
        break;
    case ST_EXEC:
        streams_exec_serve(s->client, s->app.host, s->app.host_port, &s->ctl);
        break;
    case ST_TUNNEL:
        _serve_tunnel(s);
        break;
    }
    /* its end (an execute's result) is use too */
    stream_activity_flush(&s->act, true);
    pthread_mutex_lock(&g_lock);
    for (stream **p = &g_list; *p; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            break;
        }
    }
    pthread_mutex_unlock(&g_lock);
    TLOG_DEBUG("stream ended", "session=%s app=%s", s->app.sid, s->app.name);
    ws_conn_linger(s->client, 2000);
    ws_conn_forget_fd(s->client); /* the server closes the socket */
    ws_conn_free(s->client);
    http_upgraded_close(s->handle);
    _free_stream(s);
    tlog_ctx_clear();
    return NULL;
}

static void _on_upgraded(int fd, const char *extra, size_t extra_len, void *cls,
                         http_upgraded *handle)
{
    stream *s = cls;
    s->client = ws_conn_new(fd, WS_SERVER, extra, extra_len, STREAMS_MAX_MESSAGE);
    s->handle = handle;
    pthread_mutex_lock(&g_lock);
    s->next = g_list;
    g_list = s;
    pthread_mutex_unlock(&g_lock);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    if (pthread_create(&t, &attr, _stream_thread, s) != 0) {
        TLOG_ERROR("stream thread not started", "session=%s", s->app.sid);
        ws_conn_close(s->client, WSF_CLOSE_INTERNAL, "no thread");
        pthread_mutex_lock(&g_lock);
        for (stream **p = &g_list; *p; p = &(*p)->next) {
            if (*p == s) {
                *p = s->next;
                break;
            }
        }
        pthread_mutex_unlock(&g_lock);
        ws_conn_forget_fd(s->client);
        ws_conn_free(s->client);
        http_upgraded_close(handle);
        _free_stream(s);
    }
    pthread_attr_destroy(&attr);
}

static void _on_release(void *cls)
{
    _free_stream(cls);
}

/* ---- the routes ------------------------------------------------------------------------ */

/* The checks before an upgrade, in order: the caller (verify.c), the
 * handshake (400), the session (404 / 409), the app (404 / 409), room (503).
 * True with *out, an app started; false with the problem in resp. */
static bool _admit(gateway *gw, http_req *req, http_resp *resp, gw_identity *id, const char *app,
                   json_int_t port, session_app *out, char accept[WSF_ACCEPT_LEN + 1])
{
    tlog_ctx_entity("session_name", http_param(req, "name"));
    if (!verify_request(gw, req, resp, id)) return false;
    const char *why = NULL;
    if (!ws_handshake_check(req->method, http_header(req, "Upgrade"),
                            http_header(req, "Connection"),
                            http_header(req, "Sec-WebSocket-Version"),
                            http_header(req, "Sec-WebSocket-Key"), accept, &why)) {
        http_set_header(resp, "Sec-WebSocket-Version", "13");
        http_problem(resp, 400, "invalid-api-params", NULL, "%s", why);
        return false;
    }
    json_t *info = NULL;
    if (!session_apps_running(gw, req, resp, id, http_param(req, "name"), "streams can be opened",
                              &info))
        return false;
    bool ok =
        session_apps_start(gw, req, resp, id, info, http_query_arg(req, "kernel"), app, port, out);
    json_decref(info);
    return ok;
}

static stream *_reserve(gateway *gw, http_resp *resp, stream_kind kind, const session_app *app,
                        const gw_identity *id)
{
    if (atomic_fetch_add(&g_open, 1) >= gw->max_streams || atomic_load(&g_stopping)) {
        atomic_fetch_sub(&g_open, 1);
        http_problem(resp, 503, "service-unavailable", NULL,
                     "this gateway holds %lld streams already (gateway.max_streams); try "
                     "again later",
                     (long long)gw->max_streams);
        return NULL;
    }
    stream *s = ts_calloc(1, sizeof(*s));
    s->gw = gw;
    s->kind = kind;
    s->app = *app;
    s->tcp = -1;
    stream_activity_init(&s->act, gw, id, app->sid);
    exec_ctl_init(&s->ctl);
    return s;
}

static void _upgrade(http_req *req, http_resp *resp, stream *s, const char *accept)
{
    http_set_header(resp, "Upgrade", "websocket");
    http_set_header(resp, "Sec-WebSocket-Accept", accept);
    http_reply_upgrade(req, resp, _on_upgraded, _on_release, s);
    static const char *const kinds[] = {"pty", "execute", "tunnel"};
    TLOG_INFO("stream opened", "session=%s app=%s kind=%s", s->app.sid, s->app.name,
              kinds[s->kind]);
}

/* GET /stream/session/{name}/pty and /execute. */
static void _h_term(http_req *req, http_resp *resp, gateway *gw, stream_kind kind)
{
    gw_identity id;
    session_app app;
    char accept[WSF_ACCEPT_LEN + 1];
    if (!_admit(gw, req, resp, &id, TERM_APP, 0, &app, accept)) return;
    stream *s = _reserve(gw, resp, kind, &app, &id);
    if (!s) return;
    if (kind == ST_PTY && !(s->term = _pty_open(s))) {
        http_problem(resp, 502, "bad-gateway", NULL,
                     "the session's terminal app cannot be reached from the gateway");
        _free_stream(s);
        return;
    }
    _upgrade(req, resp, s, accept);
}

static void h_pty(http_req *req, http_resp *resp, void *ctx)
{
    _h_term(req, resp, ctx, ST_PTY);
}

static void h_execute(http_req *req, http_resp *resp, void *ctx)
{
    _h_term(req, resp, ctx, ST_EXEC);
}

/* GET /stream/session/{name}/httpproxy and /tcpproxy ?app=NAME[&port=N]. */
static void h_proxy(http_req *req, http_resp *resp, void *ctx)
{
    gateway *gw = ctx;
    const char *app = http_query_arg(req, "app");
    const char *port_s = http_query_arg(req, "port");
    json_int_t port = 0;
    if (port_s && *port_s) {
        char *end = NULL;
        long long v = strtoll(port_s, &end, 10);
        port = *end || v < 1 || v > 65535 ? -1 : (json_int_t)v;
    }
    if (port < 0 || ((!app || !*app) && port == 0)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     port < 0 ? "port must be a number from 1 to 65535"
                              : "app is required (the name of one of the session's service ports)");
        return;
    }
    gw_identity id;
    session_app sa;
    char accept[WSF_ACCEPT_LEN + 1];
    if (!_admit(gw, req, resp, &id, app, port, &sa, accept)) return;
    stream *s = _reserve(gw, resp, ST_TUNNEL, &sa, &id);
    if (!s) return;
    ts_err err = {{0}};
    s->tcp = ws_tcp_connect(sa.host, sa.host_port, CONNECT_TIMEOUT_MS, &err);
    if (s->tcp < 0) {
        TLOG_WARN("tunnel: the app cannot be reached", "session=%s app=%s error=\"%s\"", sa.sid,
                  sa.name, err.msg);
        http_problem(resp, 502, "bad-gateway", NULL,
                     "the app '%s' of the session cannot be reached from the gateway", sa.name);
        _free_stream(s);
        return;
    }
    _upgrade(req, resp, s, accept);
}

/* GET /stream/session/{name}/apps. */
static void h_apps(http_req *req, http_resp *resp, void *ctx)
{
    gateway *gw = ctx;
    gw_identity id;
    tlog_ctx_entity("session_name", http_param(req, "name"));
    if (!verify_request(gw, req, resp, &id)) return;
    json_t *info = NULL;
    if (!session_apps_running(gw, req, resp, &id, http_param(req, "name"), "its apps can be listed",
                              &info))
        return;
    http_reply_json(resp, 200, session_apps_list(info));
    json_decref(info);
}

/* POST /session/{name}/interrupt: the session's execute streams on this
 * gateway instance. */
static void h_interrupt(http_req *req, http_resp *resp, void *ctx)
{
    gateway *gw = ctx;
    gw_identity id;
    tlog_ctx_entity("session_name", http_param(req, "name"));
    if (!verify_request(gw, req, resp, &id)) return;
    json_t *info = NULL;
    if (!session_apps_running(gw, req, resp, &id, http_param(req, "name"), "it can be interrupted",
                              &info))
        return;
    const char *sid = json_string_value(json_object_get(info, "sessionUuid"));
    int n = 0;
    pthread_mutex_lock(&g_lock);
    for (stream *s = g_list; s && sid; s = s->next) {
        if (s->kind == ST_EXEC && strcmp(s->app.sid, sid) == 0) {
            exec_ctl_interrupt(&s->ctl);
            n++;
        }
    }
    pthread_mutex_unlock(&g_lock);
    TLOG_INFO("session interrupted", "session=%s streams=%d", sid ? sid : "?", n);
    json_decref(info);
    http_reply(resp, 204, NULL, "", 0);
}

void streams_routes(gateway *gw)
{
    http_router *r = svc_router(gw->svc);
    http_route(r, "GET", "/stream/session/{name}/pty", h_pty, gw);
    http_route(r, "GET", "/stream/session/{name}/execute", h_execute, gw);
    http_route(r, "GET", "/stream/session/{name}/apps", h_apps, gw);
    http_route(r, "GET", "/stream/session/{name}/httpproxy", h_proxy, gw);
    http_route(r, "GET", "/stream/session/{name}/tcpproxy", h_proxy, gw);
    http_route(r, "POST", "/session/{name}/interrupt", h_interrupt, gw);
    http_route(r, "POST", "/kernel/{name}/interrupt", h_interrupt, gw);
}

void streams_stop(int64_t timeout_ms)
{
    atomic_store(&g_stopping, true);
    pthread_mutex_lock(&g_lock);
    for (stream *s = g_list; s; s = s->next) { /* wakes the threads' polls */
        if (s->kind == ST_EXEC) exec_ctl_interrupt(&s->ctl);
        shutdown(ws_conn_fd(s->client), SHUT_RD);
    }
    pthread_mutex_unlock(&g_lock);
    int64_t deadline = ts_now_mono_ms() + timeout_ms;
    while (atomic_load(&g_open) > 0 && ts_now_mono_ms() < deadline)
        usleep(10000);
    if (atomic_load(&g_open) > 0)
        TLOG_WARN("streams still open at stop", "streams=%d", atomic_load(&g_open));
}
