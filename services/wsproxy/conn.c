/* conn.c: the connection object: buffers, our own replies, closing (conn.h). */
#include "services/wsproxy/conn.h"

#include "libcommon/log.h"
#include "services/wsproxy/reply.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void wbuf_consume(wbuf *b, size_t n)
{
    b->rd += n;
    if (b->rd == b->wr) b->rd = b->wr = 0;
}

size_t wbuf_room(wbuf *b)
{
    if (b->wr == b->cap && b->rd > 0) {
        memmove(b->p, b->p + b->rd, b->wr - b->rd);
        b->wr -= b->rd;
        b->rd = 0;
    }
    return b->cap - b->wr;
}

void conn_set_extra(char **dst, size_t *len, size_t *off, char *s, size_t n)
{
    free(*dst);
    *dst = s;
    *len = n;
    *off = 0;
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

void conn_reply(conn *c, int status, const char *detail, const char *extra_headers, bool keepalive)
{
    size_t len;
    char *msg = reply_message(status, detail, extra_headers, keepalive, c->req_html, &len);
    conn_set_extra(&c->c_extra, &c->c_extra_len, &c->c_extra_off, msg, len);
    c->dn = DN_LOCAL;
    c->up = UP_DONE;
    c->local_keepalive = keepalive;
    c->deadline_kind = DL_NONE;
    atomic_fetch_add_explicit(&c->w->st.local_replies, 1, memory_order_relaxed);
}

void conn_wait_next(conn *c)
{
    c->up = UP_HEAD;
    c->deadline_kind = wbuf_len(&c->cin) ? DL_HEADER : DL_IDLE;
    c->deadline_ms = c->w->now_ms + (c->deadline_kind == DL_HEADER ? c->w->cfg->header_timeout_ms
                                                                   : c->w->cfg->idle_timeout_ms);
}

void conn_close_upstream(conn *c)
{
    if (c->ufd >= 0) close(c->ufd);
    c->ufd = -1;
    c->u_rd = c->u_wr = c->u_eof = c->u_connecting = c->u_reused = c->u_shut = c->u_hup = false;
    c->uin.rd = c->uin.wr = 0;
}

void conn_kill(conn *c, const char *why)
{
    if (c->dead) return;
    if (why) TLOG_DEBUG("connection closed", "client=%s why=\"%s\"", c->client_ip, why);
    c->dead = true;
    if (c->up == UP_TUNNEL && c->dn == DN_TUNNEL)
        atomic_fetch_sub_explicit(&c->w->st.tunnels, 1, memory_order_relaxed);
    if (c->cfd >= 0) close(c->cfd);
    c->cfd = -1;
    conn_close_upstream(c);
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
