/* request.c: a request head from the client (request.h). */
#include "services/wsproxy/request.h"

#include "libcommon/log.h"
#include "services/wsproxy/access.h"
#include "services/wsproxy/strip.h"
#include "services/wsproxy/tokens.h"
#include "services/wsproxy/upstream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longer request lines get 414 (the head may be longer: wsproxy.max_header). */
#define MAX_REQUEST_LINE 16384

/* Fields the app does not get as the client sent them: the platform's
 * credentials (strip.h), ours to restate, hop-by-hop ones. */
static bool skip_header(const proxy_config *cfg, const h1_header *h)
{
    return strip_header(cfg->strip_headers, h->name, h->name_len, h->value, h->value_len) ||
           h1_span_eq(h->name, h->name_len, "cookie") ||
           h1_span_eq(h->name, h->name_len, "x-forwarded-for") ||
           (h1_span_eq(h->name, h->name_len, "connection")) ||
           h1_span_eq(h->name, h->name_len, "keep-alive") ||
           h1_span_eq(h->name, h->name_len, "proxy-connection");
}

/* The head sent to the app: our token, the platform's cookies and
 * credentials taken out (strip.h), X-Forwarded-* added, Connection
 * normalized. */
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
            size_t n = tok_cookie_strip(h->value, h->value_len, c->w->cfg->strip_cookies, tmp,
                                        h->value_len + 1);
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
        if (skip_header(c->w->cfg, h)) continue;
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

static bool wants_html(const h1_msg *m)
{
    const h1_header *a = h1_find(m, "accept");
    return a && a->value_len >= 9 && memmem(a->value, a->value_len, "text/html", 9) != NULL;
}

/* The head parsed into m and what the connection keeps of it (the request's
 * flags, a WebSocket's accept key); false: answered (400 and the like). */
static bool parse_head(conn *c, const char *head, size_t head_len, h1_msg *m)
{
    worker *w = c->w;
    if (!h1_parse_request(head, head_len, m)) {
        atomic_fetch_add_explicit(&w->st.bad_requests, 1, memory_order_relaxed);
        TLOG_INFO("bad request", "client=%s status=%d reason=\"%s\"", c->client_ip, m->err_status,
                  m->err_reason);
        conn_reply(c, m->err_status, m->err_reason, NULL, false);
        return false;
    }
    c->req_html = wants_html(m);
    c->req_head_method = h1_span_eq(m->method, m->method_len, "HEAD");
    c->req_keepalive = m->keep_alive;
    c->req_http10 = m->minor == 0;
    c->req_upgrade = m->upgrade != NULL;
    c->req_ws = m->upgrade && h1_span_eq(m->upgrade, m->upgrade_len, "websocket");
    c->req_tcp = m->upgrade && h1_span_eq(m->upgrade, m->upgrade_len, "tessera-tcp");
    c->resp_started = false;
    c->resend_tries = 0;
    if (c->req_ws) {
        const h1_header *k = h1_find(m, "sec-websocket-key");
        if (!k || !wsf_key_valid(k->value, k->value_len)) {
            conn_reply(c, 400, "bad Sec-WebSocket-Key", NULL, false);
            return false;
        }
        wsf_accept(k->value, k->value_len, c->ws_accept);
    }
    return true;
}

/* The access decision (access.h) and the route's protocol against the
 * request's; false: refused and answered (d->set_cookie freed). */
static bool admit(conn *c, const h1_msg *m, size_t head_len, acc_decision *d)
{
    worker *w = c->w;
    access_decide(w, m, d);
    if (d->res != ACC_OK) {
        free(d->set_cookie);
        atomic_fetch_add_explicit(&w->st.auth_refused, 1, memory_order_relaxed);
        TLOG_INFO("app access refused", "client=%s result=%s why=\"%s\"", c->client_ip,
                  access_result_name(d->res), d->why);
        conn_reply(c, access_status(d->res), NULL, NULL, m->body == H1_BODY_NONE && m->keep_alive);
        if (c->local_keepalive) wbuf_consume(&c->cin, head_len);
        return false;
    }
    bool tcp_route = d->rt.proto == ROUTE_TCP;
    if (tcp_route != c->req_tcp) {
        free(d->set_cookie);
        conn_reply(c, 400,
                   tcp_route ? "a TCP app: connect with Upgrade: tessera-tcp (tessera app --bind)"
                             : "Upgrade: tessera-tcp is for TCP apps only",
                   NULL, false);
        return false;
    }
    return true;
}

/* The connection takes the decision's route; true when it is the app of the
 * kept-alive upstream connection. */
static bool take_route(conn *c, const acc_decision *d)
{
    worker *w = c->w;
    bool same_target = c->ufd >= 0 && strcmp(c->u_host, d->rt.host) == 0 && c->u_port == d->rt.port;
    if (c->has_route && strcmp(c->rt.session_id, d->rt.session_id) != 0) same_target = false;
    c->rt = d->rt;
    c->has_route = true;
    c->seen_ms = w->now_ms;
    worker_log_route(w, &c->rt);
    worker_touch(w, c->rt.session_id);
    return same_target;
}

/* A browser opening a token link: answered with the cookie set and a
 * redirect that drops the token from the address bar, only ever to a path of
 * our own origin. False (nothing sent) for any other request. */
static bool redirect_browser(conn *c, const h1_msg *m, size_t head_len, acc_decision *d)
{
    if (!d->via_token || d->rt.proto == ROUTE_TCP || c->req_upgrade || m->body != H1_BODY_NONE ||
        !c->req_html || !(h1_span_eq(m->method, m->method_len, "GET") || c->req_head_method))
        return false;
    char loc[4096];
    if (tok_redirect_location(m->target, m->target_len, loc, sizeof(loc)) == 0) strcpy(loc, "/");
    char *hdrs = ts_asprintf("Location: %s\r\n%s", loc, d->set_cookie ? d->set_cookie : "");
    free(d->set_cookie);
    d->set_cookie = NULL;
    conn_reply(c, 302, NULL, hdrs, m->keep_alive);
    free(hdrs);
    if (c->local_keepalive) wbuf_consume(&c->cin, head_len);
    return true;
}

/* The upstream connection to the route's app: the kept-alive one when it is
 * the same app, a new one otherwise; false: answered 502. */
static bool connect_app(conn *c, bool same_target)
{
    if (same_target) {
        c->u_reused = true;
        return true;
    }
    conn_close_upstream(c);
    ts_strlcpy(c->u_host, c->rt.host, sizeof(c->u_host));
    c->u_port = c->rt.port;
    if (!upstream_connect(c)) {
        upstream_failed(c, 502, "cannot connect to the app");
        return false;
    }
    return true;
}

/* A TCP app: the head is ours; our 101 goes once connected (to_upstream sees
 * the connection). */
static void start_tunnel(conn *c, size_t head_len)
{
    worker *w = c->w;
    wbuf_consume(&c->cin, head_len);
    c->up = UP_TUNNEL;
    c->dn = DN_TUNNEL;
    c->resp_started = false;
    c->tcp_wait = true;
    atomic_fetch_add_explicit(&w->st.tcp_tunnels, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->st.tunnels, 1, memory_order_relaxed);
    if (!c->u_connecting) upstream_tcp_connected(c);
}

/* The rewritten head queued for the app (kept for a resend when there is no
 * body), then the body as the head frames it. */
static void forward_head(conn *c, const h1_msg *m, size_t head_len)
{
    size_t hl;
    char *uh = rewrite_request(c, m, &hl);
    free(c->resend);
    c->resend = NULL;
    if (m->body == H1_BODY_NONE) {
        c->resend = ts_malloc(hl);
        memcpy(c->resend, uh, hl);
        c->resend_len = hl;
    }
    conn_set_extra(&c->u_extra, &c->u_extra_len, &c->u_extra_off, uh, hl);
    wbuf_consume(&c->cin, head_len);
    c->head_scan = 0;
    c->up = UP_SEND;
    c->up_body = m->body;
    c->up_fwd = m->body == H1_BODY_LENGTH ? m->content_length : 0;
    c->up_chunk_done = false;
    h1_chunked_init(&c->up_ch);
    if (c->deadline_kind != DL_CONNECT) c->deadline_kind = DL_NONE;
}

/* A complete request head is at cin.rd: decide and set the request going. */
static void handle_request(conn *c, size_t head_len)
{
    worker *w = c->w;
    worker_log_end(w); /* a new request: its route is not known yet */
    atomic_fetch_add_explicit(&w->st.requests, 1, memory_order_relaxed);
    c->req_html = false;
    h1_msg m;
    acc_decision d;
    if (!parse_head(c, c->cin.p + c->cin.rd, head_len, &m) || !admit(c, &m, head_len, &d)) return;
    bool same_target = take_route(c, &d);
    if (redirect_browser(c, &m, head_len, &d)) return;
    free(c->set_cookie);
    c->set_cookie = d.set_cookie;
    if (!connect_app(c, same_target)) return;
    c->dn = DN_HEAD;
    if (c->rt.proto == ROUTE_TCP)
        start_tunnel(c, head_len);
    else
        forward_head(c, &m, head_len);
}

void request_try_head(conn *c)
{
    if (c->up != UP_HEAD || c->dn != DN_IDLE) return;
    size_t len = wbuf_len(&c->cin);
    if (len == 0) return;
    c->req_html = false;
    const char *start = c->cin.p + c->cin.rd;
    /* The request line alone may take MAX_REQUEST_LINE of the head. */
    if (c->head_scan <= MAX_REQUEST_LINE && len >= MAX_REQUEST_LINE + 2 &&
        !memchr(start, '\n', MAX_REQUEST_LINE + 2)) {
        atomic_fetch_add_explicit(&c->w->st.bad_requests, 1, memory_order_relaxed);
        conn_reply(c, h1_request_start_bad(start, len) ? 400 : 414, "request line too long", NULL,
                   false);
        return;
    }
    size_t end = h1_head_end(start, len, c->head_scan);
    if (end == 0) {
        c->head_scan = len;
        if (h1_request_start_bad(c->cin.p + c->cin.rd, len)) {
            atomic_fetch_add_explicit(&c->w->st.bad_requests, 1, memory_order_relaxed);
            conn_reply(c, 400, "malformed request line", NULL, false);
            return;
        }
        if (len >= c->w->cfg->max_header) {
            atomic_fetch_add_explicit(&c->w->st.bad_requests, 1, memory_order_relaxed);
            conn_reply(c, 431, "request head too large", NULL, false);
        }
        return;
    }
    c->head_scan = 0;
    if (end > c->w->cfg->max_header) {
        atomic_fetch_add_explicit(&c->w->st.bad_requests, 1, memory_order_relaxed);
        conn_reply(c, 431, "request head too large", NULL, false);
        return;
    }
    handle_request(c, end);
}
