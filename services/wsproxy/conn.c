/* conn.c: one client connection through the proxy (conn.h).
 *
 * Two directions, each a small state machine over a fixed buffer:
 *   up (client -> app):   UP_HEAD  wait for a request head, authorize, rewrite
 *                         UP_SEND  our head, then the body as framed
 *                                  (Content-Length or chunked, tracked, not decoded)
 *                         UP_DONE  request sent; the next head waits for the response
 *   dn (app -> client):   DN_HEAD  wait for the response head (1xx passed on)
 *                         DN_BODY  head (rewritten when a cookie is set), body as framed
 *                         DN_LOCAL our own reply (error page, redirect, 101 for tcp)
 *   both:                 *_TUNNEL after a 101: bytes both ways, half-closes passed on.
 * Sockets are edge-triggered; conn_run() loops until no step makes progress.
 * Nothing is ever buffered beyond the two fixed buffers: a slow reader stops
 * the other side's reads. */
#include "services/wsproxy/conn.h"

#include "libcommon/http.h"
#include "libcommon/http_front.h"
#include "libcommon/log.h"
#include "services/wsproxy/tokens.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static void conn_run(conn *c);

/* ---- buffers ------------------------------------------------------------- */

static size_t buf_len(const wbuf *b)
{
    return b->wr - b->rd;
}

static void buf_consume(wbuf *b, size_t n)
{
    b->rd += n;
    if (b->rd == b->wr) b->rd = b->wr = 0;
}

/* Room at the end, compacting when the front has been consumed. */
static size_t buf_room(wbuf *b)
{
    if (b->wr == b->cap && b->rd > 0) {
        memmove(b->p, b->p + b->rd, b->wr - b->rd);
        b->wr -= b->rd;
        b->rd = 0;
    }
    return b->cap - b->wr;
}

static void set_extra(char **dst, size_t *len, size_t *off, char *s, size_t n)
{
    free(*dst);
    *dst = s;
    *len = n;
    *off = 0;
}

/* ---- local replies -------------------------------------------------------- */

/* Longer request lines get 414 (the head may be longer: wsproxy.max_header). */
#define MAX_REQUEST_LINE 16384

static const char *page_text(int status, const char **title)
{
    switch (status) {
    case 401:
        *title = "This app link is not valid";
        return "The link or cookie that opened this app is unknown or has expired, or the "
               "session has ended. Open the app again from Tessera.";
    case 403:
        *title = "This link belongs to another app";
        return "The link was issued for another app, session or user. Open the app again "
               "from Tessera with your own account.";
    case 409:
        *title = "Several apps share this address";
        return "This browser holds cookies for more than one app on this address. Open the "
               "app again from Tessera; the link replaces the other cookies.";
    case 502:
        *title = "The app did not answer";
        return "The app inside the session refused the connection or sent a malformed reply. "
               "It may still be starting.";
    case 503:
        *title = "Temporarily unavailable";
        return "The proxy cannot check app links right now. Try again in a moment.";
    case 504:
        *title = "The app did not answer in time";
        return "Connecting to the app inside the session timed out.";
    default:
        *title = http_status_text(status);
        return "The request could not be proxied.";
    }
}

/* Problem JSON (docs/api.md), as the platform's other services answer:
 * {"type": ".../probs/<kind>", "title", "msg"}; msg is the page's text and
 * the detail. */
static char *problem_body(int status, const char *detail, int *len)
{
    const char *title;
    const char *text = page_text(status, &title);
    char *msg =
        ts_asprintf("%s%s%s%s", text, detail ? " (" : "", detail ? detail : "", detail ? ")" : "");
    json_t *o = http_problem_json(http_front_kind(status), title, msg);
    free(msg);
    char *body = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!body) body = ts_strdup("{}");
    *len = (int)strlen(body);
    return body;
}

/* Our own reply; keepalive only for requests without a body. Problem JSON,
 * or an HTML page for a browser (its request's Accept names text/html). */
static void local_reply(conn *c, int status, const char *detail, const char *extra_headers,
                        bool keepalive)
{
    if (status >= 400 && !c->req_html) {
        int bl;
        char *body = problem_body(status, detail, &bl);
        char *msg =
            ts_asprintf("HTTP/1.1 %d %s\r\nContent-Type: application/problem+json\r\n"
                        "Content-Length: %d\r\nCache-Control: no-store\r\n%s%s\r\n%s",
                        status, http_status_text(status), bl, extra_headers ? extra_headers : "",
                        keepalive ? "" : "Connection: close\r\n", body);
        free(body);
        set_extra(&c->c_extra, &c->c_extra_len, &c->c_extra_off, msg, strlen(msg));
        c->dn = DN_LOCAL;
        c->up = UP_DONE;
        c->local_keepalive = keepalive;
        c->deadline_kind = DL_NONE;
        atomic_fetch_add_explicit(&c->w->st.local_replies, 1, memory_order_relaxed);
        return;
    }
    const char *title;
    const char *text = page_text(status, &title);
    char body[1024];
    int bl =
        snprintf(body, sizeof(body),
                 "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>%d %s</title>"
                 "</head>\n<body style=\"font-family:sans-serif;max-width:40em;margin:3em auto\">"
                 "<h1>%s</h1>\n<p>%s</p>\n<p><small>%d %s%s%s &middot; tessera-wsproxy"
                 "</small></p></body></html>\n",
                 status, http_status_text(status), title, text, status, http_status_text(status),
                 detail ? ": " : "", detail ? detail : "");
    if (bl < 0 || (size_t)bl >= sizeof(body)) bl = (int)strlen(body);
    char *msg =
        ts_asprintf("HTTP/1.1 %d %s\r\nContent-Type: text/html; charset=utf-8\r\n"
                    "Content-Length: %d\r\nCache-Control: no-store\r\n%s%s\r\n%.*s",
                    status, http_status_text(status), bl, extra_headers ? extra_headers : "",
                    keepalive ? "" : "Connection: close\r\n", bl, body);
    set_extra(&c->c_extra, &c->c_extra_len, &c->c_extra_off, msg, strlen(msg));
    c->dn = DN_LOCAL;
    c->up = UP_DONE;
    c->local_keepalive = keepalive;
    c->deadline_kind = DL_NONE;
    atomic_fetch_add_explicit(&c->w->st.local_replies, 1, memory_order_relaxed);
}

/* ---- upstream ------------------------------------------------------------- */

static void close_upstream(conn *c)
{
    if (c->ufd >= 0) close(c->ufd);
    c->ufd = -1;
    c->u_rd = c->u_wr = c->u_eof = c->u_connecting = c->u_reused = c->u_shut = c->u_hup = false;
    c->uin.rd = c->uin.wr = 0;
}

static bool connect_upstream(conn *c)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    char port[8];
    snprintf(port, sizeof(port), "%d", c->u_port);
    hints.ai_flags |= AI_NUMERICHOST;
    int rc = getaddrinfo(c->u_host, port, &hints, &res);
    if (rc == EAI_NONAME) {
        hints.ai_flags &= ~AI_NUMERICHOST; /* a name: resolved here (blocking) */
        rc = getaddrinfo(c->u_host, port, &hints, &res);
    }
    if (rc != 0 || !res) {
        TLOG_WARN("app address unresolvable", "target=%s:%d error=\"%s\"", c->u_host, c->u_port,
                  gai_strerror(rc));
        return false;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        freeaddrinfo(res);
        return false;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    rc = connect(fd, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    if (rc != 0 && errno != EINPROGRESS) {
        close(fd);
        return false;
    }
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
                             .data.ptr = &c->utag};
    if (epoll_ctl(c->w->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        close(fd);
        return false;
    }
    c->ufd = fd;
    c->u_connecting = rc != 0;
    c->u_wr = rc == 0;
    c->u_rd = c->u_hup = false;
    c->u_eof = c->u_reused = c->u_shut = false;
    if (c->u_connecting) {
        c->deadline_kind = DL_CONNECT;
        c->deadline_ms = c->w->now_ms + c->w->cfg->connect_timeout_ms;
    }
    if (!c->uin.p) {
        c->uin.p = ts_malloc(c->w->cfg->buffer_size);
        c->uin.cap = c->w->cfg->buffer_size;
    }
    return true;
}

/* The app failed before its response began: an error page; after: just close. */
static void upstream_failed(conn *c, int status, const char *why)
{
    atomic_fetch_add_explicit(&c->w->st.upstream_errors, 1, memory_order_relaxed);
    TLOG_INFO("app connection failed", "session=%s app=%s target=%s:%d why=\"%s\"",
              c->has_route ? c->rt.session_id : "", c->has_route ? c->rt.app : "", c->u_host,
              c->u_port, why);
    if ((c->dn == DN_HEAD && !c->resp_started) || c->tcp_wait) {
        if (c->tcp_wait) atomic_fetch_sub_explicit(&c->w->st.tunnels, 1, memory_order_relaxed);
        c->tcp_wait = false;
        close_upstream(c);
        local_reply(c, status, why, NULL, false);
        return;
    }
    conn_kill(c, why);
}

/* A reused keep-alive connection closed before answering: send the request
 * again on a fresh one (only when it had no body). */
static bool retry_request(conn *c)
{
    if (!c->u_reused || !c->resend || c->resend_tries > 0 || c->resp_started) return false;
    close_upstream(c);
    c->resend_tries++;
    if (!connect_upstream(c)) return false;
    char *copy = ts_malloc(c->resend_len);
    memcpy(copy, c->resend, c->resend_len);
    set_extra(&c->u_extra, &c->u_extra_len, &c->u_extra_off, copy, c->resend_len);
    return true;
}

/* A tcp app accepted the connection: tell the client, then tunnel. */
static void tcp_connected(conn *c)
{
    static const char k101[] = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                               "Upgrade: tessera-tcp\r\n\r\n";
    c->tcp_wait = false;
    c->resp_started = true;
    set_extra(&c->c_extra, &c->c_extra_len, &c->c_extra_off, ts_strdup(k101), sizeof(k101) - 1);
}

/* ---- requests -------------------------------------------------------------- */

static bool skip_header(const h1_header *h)
{
    return h1_span_eq(h->name, h->name_len, "cookie") ||
           h1_span_eq(h->name, h->name_len, "x-forwarded-for") ||
           (h1_span_eq(h->name, h->name_len, "connection")) ||
           h1_span_eq(h->name, h->name_len, "keep-alive") ||
           h1_span_eq(h->name, h->name_len, "proxy-connection");
}

/* The head sent to the app: our token and cookies taken out, X-Forwarded-*
 * added, Connection normalized. */
static char *rewrite_request(conn *c, const h1_msg *m, size_t *out_len)
{
    size_t cap = m->head_len + 512 + strlen(c->client_ip);
    char *out = ts_malloc(cap);
    size_t o = 0;
    memcpy(out, m->method, m->method_len);
    o += m->method_len;
    out[o++] = ' ';
    o += tok_strip_query_token(m->target, m->target_len, out + o, cap - o);
    o += (size_t)snprintf(out + o, cap - o, " HTTP/1.%d\r\n", m->minor);
    const char *xff = NULL;
    size_t xff_len = 0;
    bool proto_seen = false;
    for (int i = 0; i < m->n_headers; i++) {
        const h1_header *h = &m->headers[i];
        if (h1_span_eq(h->name, h->name_len, "x-forwarded-for")) {
            xff = h->value;
            xff_len = h->value_len;
        }
        if (h1_span_eq(h->name, h->name_len, "x-forwarded-proto")) proto_seen = true;
        if (h1_span_eq(h->name, h->name_len, "cookie")) {
            char *tmp = ts_malloc(h->value_len + 1);
            size_t n = tok_cookie_strip(h->value, h->value_len, tmp, h->value_len + 1);
            if (n) {
                memcpy(out + o, "Cookie: ", 8);
                o += 8;
                memcpy(out + o, tmp, n);
                o += n;
                out[o++] = '\r';
                out[o++] = '\n';
            }
            free(tmp);
            continue;
        }
        if (skip_header(h)) continue;
        memcpy(out + o, h->name, h->name_len);
        o += h->name_len;
        out[o++] = ':';
        out[o++] = ' ';
        memcpy(out + o, h->value, h->value_len);
        o += h->value_len;
        out[o++] = '\r';
        out[o++] = '\n';
    }
    /* The remaining additions are bounded: 512 bytes plus the client address. */
    if (xff && xff_len < 256)
        o += (size_t)snprintf(out + o, cap - o, "X-Forwarded-For: %.*s, %s\r\n", (int)xff_len, xff,
                              c->client_ip);
    else
        o += (size_t)snprintf(out + o, cap - o, "X-Forwarded-For: %s\r\n", c->client_ip);
    if (!proto_seen)
        o += (size_t)snprintf(out + o, cap - o, "X-Forwarded-Proto: %s\r\n",
                              c->w->cfg->secure_cookies ? "https" : "http");
    if (c->req_upgrade)
        o += (size_t)snprintf(out + o, cap - o, "Connection: upgrade\r\n");
    else if (!c->req_keepalive)
        o += (size_t)snprintf(out + o, cap - o, "Connection: close\r\n");
    else if (m->minor == 0)
        o += (size_t)snprintf(out + o, cap - o, "Connection: keep-alive\r\n");
    o += (size_t)snprintf(out + o, cap - o, "\r\n");
    *out_len = o;
    return out;
}

static const char *acc_log(acc_result r)
{
    switch (r) {
    case ACC_UNKNOWN:
        return "unknown";
    case ACC_FOREIGN:
        return "foreign";
    case ACC_AMBIGUOUS:
        return "ambiguous";
    case ACC_UNAVAILABLE:
        return "unavailable";
    default:
        return "ok";
    }
}

static bool wants_html(const h1_msg *m)
{
    const h1_header *a = h1_find(m, "accept");
    return a && a->value_len >= 9 && memmem(a->value, a->value_len, "text/html", 9) != NULL;
}

/* A complete request head is at cin.rd: decide and set the request going. */
static void handle_request(conn *c, size_t head_len)
{
    worker *w = c->w;
    h1_msg m;
    const char *head = c->cin.p + c->cin.rd;
    atomic_fetch_add_explicit(&w->st.requests, 1, memory_order_relaxed);
    c->req_html = false;
    if (!h1_parse_request(head, head_len, &m)) {
        atomic_fetch_add_explicit(&w->st.bad_requests, 1, memory_order_relaxed);
        TLOG_INFO("bad request", "client=%s status=%d reason=\"%s\"", c->client_ip, m.err_status,
                  m.err_reason);
        local_reply(c, m.err_status, m.err_reason, NULL, false);
        return;
    }
    c->req_html = wants_html(&m);
    c->req_head_method = h1_span_eq(m.method, m.method_len, "HEAD");
    c->req_keepalive = m.keep_alive;
    c->req_http10 = m.minor == 0;
    c->req_upgrade = m.upgrade != NULL;
    c->req_ws = m.upgrade && h1_span_eq(m.upgrade, m.upgrade_len, "websocket");
    c->req_tcp = m.upgrade && h1_span_eq(m.upgrade, m.upgrade_len, "tessera-tcp");
    c->resp_started = false;
    c->resend_tries = 0;
    if (c->req_ws) {
        const h1_header *k = h1_find(&m, "sec-websocket-key");
        if (!k || !wsf_key_valid(k->value, k->value_len)) {
            local_reply(c, 400, "bad Sec-WebSocket-Key", NULL, false);
            return;
        }
        wsf_accept(k->value, k->value_len, c->ws_accept);
    }
    bool no_body = m.body == H1_BODY_NONE;

    acc_decision d;
    access_decide(w, &m, &d);
    if (d.res != ACC_OK) {
        free(d.set_cookie);
        atomic_fetch_add_explicit(&w->st.auth_refused, 1, memory_order_relaxed);
        int status = d.res == ACC_UNKNOWN     ? 401
                     : d.res == ACC_FOREIGN   ? 403
                     : d.res == ACC_AMBIGUOUS ? 409
                                              : 503;
        TLOG_INFO("app access refused", "client=%s result=%s why=\"%s\"", c->client_ip,
                  acc_log(d.res), d.why);
        local_reply(c, status, NULL, NULL, no_body && m.keep_alive);
        if (c->local_keepalive) buf_consume(&c->cin, head_len);
        return;
    }
    bool tcp_route = d.rt.proto == ROUTE_TCP;
    if (tcp_route != c->req_tcp) {
        free(d.set_cookie);
        local_reply(c, 400,
                    tcp_route ? "a TCP app: connect with Upgrade: tessera-tcp (tessera app --bind)"
                              : "Upgrade: tessera-tcp is for TCP apps only",
                    NULL, false);
        return;
    }
    /* Same app as the kept-alive upstream connection? */
    bool same_target = c->ufd >= 0 && strcmp(c->u_host, d.rt.host) == 0 && c->u_port == d.rt.port;
    if (c->has_route && strcmp(c->rt.session_id, d.rt.session_id) != 0) same_target = false;
    c->rt = d.rt;
    c->has_route = true;
    c->seen_ms = w->now_ms;
    worker_touch(w, c->rt.session_id);

    if (d.via_token && !tcp_route && !c->req_upgrade && no_body && wants_html(&m) &&
        (h1_span_eq(m.method, m.method_len, "GET") || c->req_head_method)) {
        /* A browser opening the link: set the cookie, drop the token from the
         * address bar. */
        char loc[4096];
        size_t ll = m.target_len < sizeof(loc)
                        ? tok_strip_query_token(m.target, m.target_len, loc, sizeof(loc))
                        : 0;
        if (ll == 0) strcpy(loc, "/");
        char *hdrs = ts_asprintf("Location: %s\r\n%s", loc, d.set_cookie ? d.set_cookie : "");
        free(d.set_cookie);
        local_reply(c, 302, NULL, hdrs, m.keep_alive);
        free(hdrs);
        if (c->local_keepalive) buf_consume(&c->cin, head_len);
        return;
    }
    free(c->set_cookie);
    c->set_cookie = d.set_cookie;

    if (!same_target) {
        close_upstream(c);
        ts_strlcpy(c->u_host, d.rt.host, sizeof(c->u_host));
        c->u_port = d.rt.port;
        if (!connect_upstream(c)) {
            upstream_failed(c, 502, "cannot connect to the app");
            return;
        }
    } else {
        c->u_reused = true;
    }
    c->dn = DN_HEAD;
    if (tcp_route) {
        /* Our 101 once connected (to_upstream sees the connection). */
        buf_consume(&c->cin, head_len);
        c->up = UP_TUNNEL;
        c->dn = DN_TUNNEL;
        c->resp_started = false;
        c->tcp_wait = true;
        atomic_fetch_add_explicit(&w->st.tcp_tunnels, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&w->st.tunnels, 1, memory_order_relaxed);
        if (!c->u_connecting) tcp_connected(c);
        return;
    }
    size_t hl;
    char *uh = rewrite_request(c, &m, &hl);
    free(c->resend);
    c->resend = NULL;
    if (no_body) {
        c->resend = ts_malloc(hl);
        memcpy(c->resend, uh, hl);
        c->resend_len = hl;
    }
    set_extra(&c->u_extra, &c->u_extra_len, &c->u_extra_off, uh, hl);
    buf_consume(&c->cin, head_len);
    c->head_scan = 0;
    c->up = UP_SEND;
    c->up_body = m.body;
    c->up_fwd = m.body == H1_BODY_LENGTH ? m.content_length : 0;
    c->up_chunk_done = false;
    h1_chunked_init(&c->up_ch);
    if (c->deadline_kind != DL_CONNECT) c->deadline_kind = DL_NONE;
}

static void try_request_head(conn *c)
{
    if (c->up != UP_HEAD || c->dn != DN_IDLE) return;
    size_t len = buf_len(&c->cin);
    if (len == 0) return;
    c->req_html = false;
    const char *start = c->cin.p + c->cin.rd;
    /* The request line alone may take MAX_REQUEST_LINE of the head. */
    if (c->head_scan <= MAX_REQUEST_LINE && len >= MAX_REQUEST_LINE + 2 &&
        !memchr(start, '\n', MAX_REQUEST_LINE + 2)) {
        atomic_fetch_add_explicit(&c->w->st.bad_requests, 1, memory_order_relaxed);
        local_reply(c, h1_request_start_bad(start, len) ? 400 : 414, "request line too long", NULL,
                    false);
        return;
    }
    size_t end = h1_head_end(start, len, c->head_scan);
    if (end == 0) {
        c->head_scan = len;
        if (h1_request_start_bad(c->cin.p + c->cin.rd, len)) {
            atomic_fetch_add_explicit(&c->w->st.bad_requests, 1, memory_order_relaxed);
            local_reply(c, 400, "malformed request line", NULL, false);
            return;
        }
        if (len >= c->w->cfg->max_header) {
            atomic_fetch_add_explicit(&c->w->st.bad_requests, 1, memory_order_relaxed);
            local_reply(c, 431, "request head too large", NULL, false);
        }
        return;
    }
    c->head_scan = 0;
    if (end > c->w->cfg->max_header) {
        atomic_fetch_add_explicit(&c->w->st.bad_requests, 1, memory_order_relaxed);
        local_reply(c, 431, "request head too large", NULL, false);
        return;
    }
    handle_request(c, end);
}

/* ---- responses ------------------------------------------------------------- */

static void request_done(conn *c)
{
    bool client_close =
        !c->req_keepalive || !c->resp_keepalive || c->dn_body == H1_BODY_UNTIL_CLOSE;
    c->dn = DN_IDLE;
    free(c->set_cookie);
    c->set_cookie = NULL;
    free(c->resend);
    c->resend = NULL;
    if (c->up != UP_DONE) {
        /* The app answered before taking the whole body: cannot go on. */
        conn_kill(c, "response before the request body ended");
        return;
    }
    if (!c->resp_keepalive || c->u_eof) close_upstream(c);
    if (client_close || c->c_eof) {
        conn_kill(c, NULL);
        return;
    }
    c->up = UP_HEAD;
    c->deadline_kind = buf_len(&c->cin) ? DL_HEADER : DL_IDLE;
    c->deadline_ms = c->w->now_ms + (c->deadline_kind == DL_HEADER ? c->w->cfg->header_timeout_ms
                                                                   : c->w->cfg->idle_timeout_ms);
}

/* Send the response head on: the app's own bytes (raw_end of uin) when they
 * are fine as they are, else a rewritten head (canon: made CRLF, owned and
 * freed here; with_cookie: the app cookie added) from c_extra, the raw head
 * consumed from uin. */
static void forward_head(conn *c, char *canon, size_t end, size_t raw_end, bool with_cookie)
{
    if (!canon && !with_cookie) {
        c->dn_fwd = raw_end;
        return;
    }
    const char *p = canon ? canon : c->uin.p + c->uin.rd;
    size_t sl = with_cookie ? strlen(c->set_cookie) : 0;
    char *h = ts_malloc(end + sl);
    memcpy(h, p, end - 2);
    if (sl) memcpy(h + end - 2, c->set_cookie, sl);
    memcpy(h + end - 2 + sl, "\r\n", 2);
    set_extra(&c->c_extra, &c->c_extra_len, &c->c_extra_off, h, end + sl);
    buf_consume(&c->uin, raw_end);
    free(canon);
}

static void try_response_head(conn *c)
{
    if (c->dn != DN_HEAD || c->dn_fwd || c->c_extra) return;
    size_t len = buf_len(&c->uin);
    const char *p = c->uin.p + c->uin.rd;
    bool bare_lf = false;
    size_t end = len ? h1_response_head_end(p, len, &bare_lf) : 0;
    if (end == 0) {
        if (len >= c->w->cfg->max_header)
            upstream_failed(c, 502, "response head too large");
        else if (c->u_eof) {
            if (len == 0 && retry_request(c)) return;
            upstream_failed(c, 502, "the app closed the connection");
        }
        return;
    }
    /* A head with bare LF line ends goes on (parsed and sent) as CRLF. */
    size_t raw_end = end;
    char *canon = NULL;
    if (bare_lf) {
        canon = h1_head_crlf(p, raw_end, &end);
        if (!canon) {
            upstream_failed(c, 502, "out of memory");
            return;
        }
        p = canon;
    }
    h1_msg m;
    if (!h1_parse_response(p, end, c->req_head_method, &m)) {
        upstream_failed(c, 502, m.err_reason);
        free(canon);
        return;
    }
    c->resp_started = true;
    free(c->resend);
    c->resend = NULL;
    if (m.status == 101) {
        if (!c->req_upgrade) {
            upstream_failed(c, 502, "101 without an upgrade request");
            free(canon);
            return;
        }
        if (c->req_ws) {
            const h1_header *a = h1_find(&m, "sec-websocket-accept");
            if (!a || a->value_len != WSF_ACCEPT_LEN ||
                memcmp(a->value, c->ws_accept, WSF_ACCEPT_LEN) != 0) {
                c->resp_started = false;
                upstream_failed(c, 502, "bad Sec-WebSocket-Accept from the app");
                free(canon);
                return;
            }
        }
        forward_head(c, canon, end, raw_end, false);
        c->dn = DN_TUNNEL;
        c->up = UP_TUNNEL;
        c->deadline_kind = DL_NONE;
        atomic_fetch_add_explicit(&c->w->st.upgrades, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&c->w->st.tunnels, 1, memory_order_relaxed);
        return;
    }
    if (m.status < 200) {
        forward_head(c, canon, end, raw_end, false); /* 100 Continue, 103: pass on, wait */
        c->resp_started = false;
        return;
    }
    forward_head(c, canon, end, raw_end, c->set_cookie != NULL);
    c->dn = DN_BODY;
    c->dn_body = m.body;
    c->resp_keepalive = m.keep_alive;
    if (m.body == H1_BODY_LENGTH) c->dn_fwd += m.content_length;
    c->dn_chunk_done = false;
    h1_chunked_init(&c->dn_ch);
}

/* ---- moving bytes ------------------------------------------------------------ */

static ssize_t do_send(int fd, const void *p, size_t n)
{
    return send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Write from extra; true on progress. *fail on a hard error. */
static bool write_extra(int fd, bool *ready, char **s, size_t *len, size_t *off, bool *fail)
{
    if (!*s || !*ready) return false;
    ssize_t n = do_send(fd, *s + *off, *len - *off);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            *ready = false;
        else
            *fail = true;
        return false;
    }
    *off += (size_t)n;
    if (*off == *len) {
        free(*s);
        *s = NULL;
        *len = *off = 0;
    }
    return true;
}

static bool write_buf(int fd, bool *ready, wbuf *b, size_t n, size_t *written, bool *fail)
{
    *written = 0;
    if (!*ready || n == 0) return false;
    ssize_t k = do_send(fd, b->p + b->rd, n);
    if (k < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            *ready = false;
        else
            *fail = true;
        return false;
    }
    *written = (size_t)k;
    buf_consume(b, (size_t)k);
    return k > 0;
}

/* After an error reply with unread input: closing now would reset the
 * connection and could destroy the reply before the client reads it. Send
 * FIN, then read and drop for a while (nginx's lingering close). */
static void start_linger(conn *c)
{
    close_upstream(c);
    shutdown(c->cfd, SHUT_WR);
    c->lingering = true;
    c->deadline_kind = DL_LINGER;
    c->deadline_ms = c->w->now_ms + 2000;
    c->cin.rd = c->cin.wr = 0;
    c->head_scan = 0; /* counts the bytes dropped */
}

static void linger_drain(conn *c)
{
    while (c->c_rd && !c->dead) {
        ssize_t n = recv(c->cfd, c->cin.p, c->cin.cap, 0);
        if (n > 0) {
            c->head_scan += (size_t)n;
            if (c->head_scan > (1u << 20)) conn_kill(c, NULL);
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            c->c_rd = false;
            return;
        }
        conn_kill(c, NULL);
    }
}

static bool client_in(conn *c)
{
    if (!c->c_rd || c->c_eof) return false;
    if (c->up != UP_HEAD && c->up != UP_SEND && c->up != UP_TUNNEL) return false;
    if (c->up == UP_SEND && c->up_body == H1_BODY_NONE) return false;
    if (c->dn == DN_LOCAL) return false;
    size_t room = buf_room(&c->cin);
    if (room == 0) return false;
    ssize_t n = recv(c->cfd, c->cin.p + c->cin.wr, room, 0);
    if (n > 0) {
        if (c->up == UP_HEAD && c->deadline_kind == DL_IDLE) {
            c->deadline_kind = DL_HEADER;
            c->deadline_ms = c->w->now_ms + c->w->cfg->header_timeout_ms;
        }
        c->cin.wr += (size_t)n;
        /* A short read drained the socket: the next data brings a new edge
         * (saves the recv that would answer EAGAIN, as nginx does). */
        if ((size_t)n < room && !c->c_hup) c->c_rd = false;
        atomic_fetch_add_explicit(&c->w->st.bytes_in, (uint64_t)n, memory_order_relaxed);
        return true;
    }
    if (n == 0) {
        c->c_eof = true;
        return true;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
        c->c_rd = false;
        return false;
    }
    conn_kill(c, NULL);
    return true;
}

static bool upstream_in(conn *c)
{
    if (c->ufd < 0 || c->u_connecting || !c->u_rd || c->u_eof) return false;
    if (c->dn == DN_LOCAL || c->tcp_wait) return false;
    size_t room = buf_room(&c->uin);
    if (room == 0) return false;
    ssize_t n = recv(c->ufd, c->uin.p + c->uin.wr, room, 0);
    if (n > 0) {
        if (c->dn == DN_IDLE) {
            close_upstream(c); /* bytes nobody asked for */
            return true;
        }
        c->uin.wr += (size_t)n;
        if ((size_t)n < room && !c->u_hup) c->u_rd = false;
        return true;
    }
    if (n == 0) {
        if (c->dn == DN_IDLE) {
            close_upstream(c);
            return true;
        }
        c->u_eof = true;
        return true;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
        c->u_rd = false;
        return false;
    }
    if (c->dn == DN_IDLE) {
        close_upstream(c);
        return true;
    }
    if (c->dn == DN_HEAD && buf_len(&c->uin) == 0 && retry_request(c)) return true;
    upstream_failed(c, 502, "connection to the app lost");
    return true;
}

/* Request framing: how much of cin may go to the app now. */
static void up_advance(conn *c)
{
    if (c->up != UP_SEND || c->u_extra) return;
    if (c->up_body == H1_BODY_CHUNKED && c->up_fwd == 0 && !c->up_chunk_done) {
        size_t avail = buf_len(&c->cin), used = 0;
        if (avail) {
            int r = h1_chunked_feed(&c->up_ch, c->cin.p + c->cin.rd, avail, &used, NULL, NULL);
            if (r == H1C_ERROR) {
                atomic_fetch_add_explicit(&c->w->st.bad_requests, 1, memory_order_relaxed);
                if (!c->resp_started && c->dn == DN_HEAD) {
                    close_upstream(c);
                    local_reply(c, 400, "bad chunked body", NULL, false);
                } else {
                    conn_kill(c, "bad chunked body");
                }
                return;
            }
            c->up_fwd = used;
            if (r == H1C_DONE) c->up_chunk_done = true;
        }
    }
    bool finished = c->up_fwd == 0 && (c->up_body != H1_BODY_CHUNKED || c->up_chunk_done);
    if (finished) {
        c->up = UP_DONE;
        if (c->dn == DN_IDLE) request_done(c);
    }
}

static bool to_upstream(conn *c)
{
    if (c->ufd < 0 || c->u_connecting || c->dead) return false;
    bool fail = false, progress = false;
    if (c->u_extra) {
        progress =
            write_extra(c->ufd, &c->u_wr, &c->u_extra, &c->u_extra_len, &c->u_extra_off, &fail);
        /* The head is out: a request without a body is complete now, before
         * a fast app's response can end it (request_done wants UP_DONE). */
        if (!fail && !c->u_extra && c->up == UP_SEND) up_advance(c);
    } else if (c->up == UP_SEND) {
        up_advance(c);
        if (c->dead || c->up != UP_SEND) return true;
        size_t n = buf_len(&c->cin);
        if (n > c->up_fwd) n = (size_t)c->up_fwd;
        size_t wrote;
        progress = write_buf(c->ufd, &c->u_wr, &c->cin, n, &wrote, &fail);
        c->up_fwd -= wrote;
        if (progress) up_advance(c);
    } else if (c->up == UP_TUNNEL && c->dn == DN_TUNNEL && !c->tcp_wait) {
        size_t wrote;
        progress = write_buf(c->ufd, &c->u_wr, &c->cin, buf_len(&c->cin), &wrote, &fail);
        if (!fail && c->c_eof && buf_len(&c->cin) == 0 && !c->u_shut) {
            shutdown(c->ufd, SHUT_WR);
            c->u_shut = true;
            progress = true;
        }
    }
    if (fail) {
        if (c->dn == DN_HEAD && !c->resp_started && retry_request(c)) return true;
        upstream_failed(c, 502, "connection to the app lost");
        return true;
    }
    return progress;
}

/* Response framing: how much of uin may go to the client now; ends requests. */
static void dn_advance(conn *c)
{
    if (c->dn != DN_BODY || c->c_extra || c->dn_fwd) return;
    switch (c->dn_body) {
    case H1_BODY_CHUNKED:
        if (!c->dn_chunk_done) {
            size_t avail = buf_len(&c->uin), used = 0;
            if (avail == 0) {
                if (c->u_eof) conn_kill(c, "the app closed mid-body");
                return;
            }
            int r = h1_chunked_feed(&c->dn_ch, c->uin.p + c->uin.rd, avail, &used, NULL, NULL);
            if (r == H1C_ERROR) {
                conn_kill(c, "bad chunked response from the app");
                return;
            }
            c->dn_fwd = used;
            if (r == H1C_DONE) c->dn_chunk_done = true;
            return;
        }
        break;
    case H1_BODY_UNTIL_CLOSE:
        c->dn_fwd = buf_len(&c->uin);
        if (c->dn_fwd || !c->u_eof) return;
        break;
    default:
        break;
    }
    request_done(c);
}

static bool to_client(conn *c)
{
    if (c->dead) return false;
    bool fail = false, progress = false;
    if (c->c_extra) {
        progress =
            write_extra(c->cfd, &c->c_wr, &c->c_extra, &c->c_extra_len, &c->c_extra_off, &fail);
        if (!fail && !c->c_extra && c->dn == DN_LOCAL) {
            if (c->local_keepalive && !c->c_eof) {
                c->dn = DN_IDLE;
                c->up = UP_HEAD;
                c->deadline_kind = buf_len(&c->cin) ? DL_HEADER : DL_IDLE;
                c->deadline_ms =
                    c->w->now_ms + (c->deadline_kind == DL_HEADER ? c->w->cfg->header_timeout_ms
                                                                  : c->w->cfg->idle_timeout_ms);
            } else {
                start_linger(c);
                return true;
            }
        }
    } else if (c->dn == DN_HEAD || c->dn == DN_BODY) {
        if (c->dn == DN_BODY) dn_advance(c);
        if (c->dead || (c->dn != DN_BODY && c->dn != DN_HEAD)) return true;
        size_t n = buf_len(&c->uin);
        if (n > c->dn_fwd) n = (size_t)c->dn_fwd;
        size_t wrote;
        progress = write_buf(c->cfd, &c->c_wr, &c->uin, n, &wrote, &fail);
        c->dn_fwd -= wrote;
        atomic_fetch_add_explicit(&c->w->st.bytes_out, wrote, memory_order_relaxed);
        if (progress && c->dn == DN_BODY) dn_advance(c);
    } else if (c->dn == DN_TUNNEL) {
        size_t n = c->dn_fwd ? (c->dn_fwd < buf_len(&c->uin) ? c->dn_fwd : buf_len(&c->uin))
                             : buf_len(&c->uin);
        size_t wrote;
        progress = write_buf(c->cfd, &c->c_wr, &c->uin, n, &wrote, &fail);
        if (c->dn_fwd) c->dn_fwd -= wrote;
        atomic_fetch_add_explicit(&c->w->st.bytes_out, wrote, memory_order_relaxed);
        if (!fail && c->u_eof && buf_len(&c->uin) == 0 && !c->c_shut) {
            shutdown(c->cfd, SHUT_WR);
            c->c_shut = true;
            progress = true;
        }
    }
    if (fail) {
        conn_kill(c, NULL);
        return true;
    }
    return progress;
}

/* ---- the loop ---------------------------------------------------------------- */

#define RUN_TURNS 64

static void conn_run(conn *c)
{
    for (int turn = 0; !c->dead; turn++) {
        if (c->lingering) {
            linger_drain(c);
            return;
        }
        if (turn == RUN_TURNS) {
            /* Fair to the worker's other connections: continue after the batch. */
            if (!c->queued) {
                c->queued = true;
                c->again = c->w->again;
                c->w->again = c;
            }
            return;
        }
        bool p = false;
        p |= client_in(c);
        if (c->dead) return;
        if (c->up == UP_HEAD) try_request_head(c);
        if (c->dead) return;
        if (c->up == UP_HEAD && c->c_eof && c->dn == DN_IDLE) {
            conn_kill(c, NULL); /* end of a keep-alive connection, or a partial head */
            return;
        }
        p |= to_upstream(c);
        if (c->dead) return;
        p |= upstream_in(c);
        if (c->dead) return;
        try_response_head(c);
        if (c->dead) return;
        p |= to_client(c);
        if (c->dead) return;
        if (c->up == UP_SEND && c->c_eof && buf_len(&c->cin) == 0 && !c->u_extra) {
            conn_kill(c, "client closed mid-request");
            return;
        }
        if (c->dn == DN_BODY && c->u_eof && buf_len(&c->uin) == 0 && c->dn_fwd > 0 && !c->c_extra) {
            conn_kill(c, "the app closed mid-body");
            return;
        }
        if (c->up == UP_TUNNEL && c->dn == DN_TUNNEL && c->c_shut && c->u_shut) {
            conn_kill(c, NULL);
            return;
        }
        if (!p) return;
    }
}

void conn_on_event(conn *c, int kind, uint32_t events)
{
    if (c->dead) return;
    if (kind == TAG_CLIENT) {
        if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) c->c_rd = true;
        if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) c->c_hup = true; /* an EOF is pending */
        if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) c->c_wr = true;
    } else {
        if (c->ufd < 0) return;
        if (c->u_connecting && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
            int soerr = 0;
            socklen_t sl = sizeof(soerr);
            struct sockaddr_storage peer;
            socklen_t pl = sizeof(peer);
            getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
            if (soerr != 0) {
                upstream_failed(c, 502, "the app refused the connection");
                conn_run(c);
                return;
            }
            if (getpeername(c->ufd, (struct sockaddr *)&peer, &pl) != 0)
                return; /* still connecting */
            c->u_connecting = false;
            if (c->deadline_kind == DL_CONNECT) c->deadline_kind = DL_NONE;
            if (c->tcp_wait) tcp_connected(c);
        }
        if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) c->u_rd = true;
        if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) c->u_hup = true;
        if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) c->u_wr = true;
    }
    conn_run(c);
}

void conn_on_deadline(conn *c)
{
    if (c->dead || c->deadline_kind == DL_NONE || c->w->now_ms < c->deadline_ms) return;
    int kind = c->deadline_kind;
    c->deadline_kind = DL_NONE;
    atomic_fetch_add_explicit(&c->w->st.timeouts, 1, memory_order_relaxed);
    if (kind == DL_HEADER && buf_len(&c->cin) > 0 && c->up == UP_HEAD) {
        local_reply(c, 408, "request head not received in time", NULL, false);
        conn_run(c);
    } else if (kind == DL_LINGER) {
        conn_kill(c, NULL);
    } else if (kind == DL_CONNECT) {
        upstream_failed(c, 504, "connecting to the app timed out");
        conn_run(c);
    } else {
        conn_kill(c, NULL);
    }
}

void conn_resume(conn *c)
{
    c->queued = false;
    if (c->dead) {
        /* conn_kill left it off the dead list while it was queued */
        c->next = c->w->dead;
        c->w->dead = c;
        return;
    }
    conn_run(c);
}

conn *conn_new(worker *w, int fd, const char *client_ip)
{
    conn *c = ts_calloc(1, sizeof(*c));
    c->w = w;
    c->cfd = fd;
    c->ufd = -1;
    c->ctag = (ep_tag){TAG_CLIENT, c};
    c->utag = (ep_tag){TAG_UPSTREAM, c};
    size_t cap = w->cfg->buffer_size;
    if (cap < w->cfg->max_header + 1) cap = w->cfg->max_header + 1;
    c->cin.p = ts_malloc(cap);
    c->cin.cap = cap;
    ts_strlcpy(c->client_ip, client_ip, sizeof(c->client_ip));
    c->deadline_kind = DL_HEADER;
    c->deadline_ms = w->now_ms + w->cfg->header_timeout_ms;
    return c;
}

void conn_kill(conn *c, const char *why)
{
    if (c->dead) return;
    if (why)
        TLOG_DEBUG("connection closed", "client=%s session=%s why=\"%s\"", c->client_ip,
                   c->has_route ? c->rt.session_id : "", why);
    c->dead = true;
    if (c->up == UP_TUNNEL && c->dn == DN_TUNNEL)
        atomic_fetch_sub_explicit(&c->w->st.tunnels, 1, memory_order_relaxed);
    if (c->cfd >= 0) close(c->cfd);
    c->cfd = -1;
    close_upstream(c);
    worker *w = c->w;
    if (c->prev)
        c->prev->next = c->next;
    else
        w->live = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = NULL;
    c->next = NULL;
    if (!c->queued) {
        c->next = w->dead;
        w->dead = c;
    }
    w->n_conns--;
    atomic_fetch_sub_explicit(&w->st.active, 1, memory_order_relaxed);
}

void conn_free(conn *c)
{
    free(c->cin.p);
    free(c->uin.p);
    free(c->c_extra);
    free(c->u_extra);
    free(c->set_cookie);
    free(c->resend);
    free(c);
}
