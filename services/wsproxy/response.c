/* response.c: the app's response head, and the end of a request (response.h). */
#include "services/wsproxy/response.h"

#include "libcommon/log.h"
#include "services/wsproxy/tokens.h"
#include "services/wsproxy/upstream.h"

#include <stdlib.h>
#include <string.h>

void response_done(conn *c)
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
    if (!c->resp_keepalive || c->u_eof) conn_close_upstream(c);
    if (client_close || c->c_eof) {
        conn_kill(c, NULL);
        return;
    }
    conn_wait_next(c);
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
    conn_set_extra(&c->c_extra, &c->c_extra_len, &c->c_extra_off, h, end + sl);
    wbuf_consume(&c->uin, raw_end);
    free(canon);
}

/* The head p (end bytes, CRLF lines, parsed as m) without the Set-Cookie
 * fields that set a platform cookie (tok_set_cookie_platform): a new head
 * (*new_end bytes), or NULL when it has none. */
static char *drop_platform_cookies(const conn *c, const char *p, size_t end, const h1_msg *m,
                                   size_t *new_end)
{
    bool any = false;
    for (int i = 0; i < m->n_headers && !any; i++) {
        const h1_header *h = &m->headers[i];
        any = h1_span_eq(h->name, h->name_len, "set-cookie") &&
              tok_set_cookie_platform(h->value, h->value_len, c->w->cfg->strip_cookies);
    }
    if (!any) return NULL;
    const char *eol = memchr(p, '\n', end);
    size_t sl = eol ? (size_t)(eol - p) + 1 : 0;
    char *out = ts_malloc(end + 2);
    memcpy(out, p, sl);
    size_t o = sl;
    for (int i = 0; i < m->n_headers; i++) {
        const h1_header *h = &m->headers[i];
        if (h1_span_eq(h->name, h->name_len, "set-cookie") &&
            tok_set_cookie_platform(h->value, h->value_len, c->w->cfg->strip_cookies))
            continue;
        /* "name: value\r\n" is never longer than the field was */
        memcpy(out + o, h->name, h->name_len);
        o += h->name_len;
        memcpy(out + o, ": ", 2);
        o += 2;
        memcpy(out + o, h->value, h->value_len);
        o += h->value_len;
        memcpy(out + o, "\r\n", 2);
        o += 2;
    }
    memcpy(out + o, "\r\n", 2);
    *new_end = o + 2;
    return out;
}

void response_try_head(conn *c)
{
    if (c->dn != DN_HEAD || c->dn_fwd || c->c_extra) return;
    size_t len = wbuf_len(&c->uin);
    const char *p = c->uin.p + c->uin.rd;
    bool bare_lf = false;
    size_t end = len ? h1_response_head_end(p, len, &bare_lf) : 0;
    if (end == 0) {
        if (len >= c->w->cfg->max_header)
            upstream_failed(c, 502, "response head too large");
        else if (c->u_eof) {
            if (len == 0 && upstream_retry(c)) return;
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
    /* An app may not set the platform's cookies in its visitors' browsers. */
    size_t clean_end;
    char *clean = drop_platform_cookies(c, p, end, &m, &clean_end);
    if (clean) {
        TLOG_INFO("an app's Set-Cookie of a platform cookie dropped", "status=%d", m.status);
        free(canon); /* m pointed into it: parsed again below */
        canon = clean;
        p = canon;
        end = clean_end;
        if (!h1_parse_response(p, end, c->req_head_method, &m)) {
            upstream_failed(c, 502, m.err_reason);
            free(canon);
            return;
        }
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
        if (c->req_ws) {
            /* frames the client sent before the 101 wait in cin: read from there */
            ws_use_init(&c->wsu);
            if (wbuf_len(&c->cin) &&
                ws_use_feed(&c->wsu, (const uint8_t *)c->cin.p + c->cin.rd, wbuf_len(&c->cin)) &&
                c->has_route)
                worker_touch(c->w, c->rt.session_id);
        }
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
