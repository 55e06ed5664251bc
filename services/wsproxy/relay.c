/* relay.c: a connection's bytes both ways and its run loop (relay.h).
 *
 * Two directions, each a small state machine over a fixed buffer:
 *   up (client -> app):   UP_HEAD  wait for a request head (request.c)
 *                         UP_SEND  our head, then the body as framed
 *                                  (Content-Length or chunked, tracked, not decoded)
 *                         UP_DONE  request sent; the next head waits for the response
 *   dn (app -> client):   DN_HEAD  wait for the response head (response.c; 1xx passed on)
 *                         DN_BODY  head (rewritten when a cookie is set), body as framed
 *                         DN_LOCAL our own reply (error page, redirect, 101 for tcp)
 *   both:                 *_TUNNEL after a 101: bytes both ways, half-closes passed on.
 * Sockets are edge-triggered; conn_run() loops until no step makes progress.
 * Nothing is ever buffered beyond the two fixed buffers: a slow reader stops
 * the other side's reads. */
#include "services/wsproxy/relay.h"

#include "services/wsproxy/request.h"
#include "services/wsproxy/response.h"
#include "services/wsproxy/upstream.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

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
    wbuf_consume(b, (size_t)k);
    return k > 0;
}

/* After an error reply with unread input: closing now would reset the
 * connection and could destroy the reply before the client reads it. Send
 * FIN, then read and drop for a while (nginx's lingering close). */
static void start_linger(conn *c)
{
    conn_close_upstream(c);
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
    size_t room = wbuf_room(&c->cin);
    if (room == 0) return false;
    ssize_t n = recv(c->cfd, c->cin.p + c->cin.wr, room, 0);
    if (n > 0) {
        if (c->up == UP_HEAD && c->deadline_kind == DL_IDLE) {
            c->deadline_kind = DL_HEADER;
            c->deadline_ms = c->w->now_ms + c->w->cfg->header_timeout_ms;
        }
        /* The user's bytes on an upgraded connection are use of the session
         * (the idle checker's; a request counts in request.c): a connection
         * that moves nothing does not keep the session, nor does a WebSocket
         * whose client only answers pings (ws_use.h). */
        if (c->up == UP_TUNNEL && c->has_route &&
            (!c->req_ws || ws_use_feed(&c->wsu, (const uint8_t *)c->cin.p + c->cin.wr, (size_t)n)))
            worker_touch(c->w, c->rt.session_id);
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
    size_t room = wbuf_room(&c->uin);
    if (room == 0) return false;
    ssize_t n = recv(c->ufd, c->uin.p + c->uin.wr, room, 0);
    if (n > 0) {
        if (c->dn == DN_IDLE) {
            conn_close_upstream(c); /* bytes nobody asked for */
            return true;
        }
        c->uin.wr += (size_t)n;
        if ((size_t)n < room && !c->u_hup) c->u_rd = false;
        return true;
    }
    if (n == 0) {
        if (c->dn == DN_IDLE) {
            conn_close_upstream(c);
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
        conn_close_upstream(c);
        return true;
    }
    if (c->dn == DN_HEAD && wbuf_len(&c->uin) == 0 && upstream_retry(c)) return true;
    upstream_failed(c, 502, "connection to the app lost");
    return true;
}

/* Request framing: how much of cin may go to the app now. */
static void up_advance(conn *c)
{
    if (c->up != UP_SEND || c->u_extra) return;
    if (c->up_body == H1_BODY_CHUNKED && c->up_fwd == 0 && !c->up_chunk_done) {
        size_t avail = wbuf_len(&c->cin), used = 0;
        if (avail) {
            int r = h1_chunked_feed(&c->up_ch, c->cin.p + c->cin.rd, avail, &used, NULL, NULL);
            if (r == H1C_ERROR) {
                atomic_fetch_add_explicit(&c->w->st.bad_requests, 1, memory_order_relaxed);
                if (!c->resp_started && c->dn == DN_HEAD) {
                    conn_close_upstream(c);
                    conn_reply(c, 400, "bad chunked body", NULL, false);
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
        if (c->dn == DN_IDLE) response_done(c);
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
        size_t n = wbuf_len(&c->cin);
        if (n > c->up_fwd) n = (size_t)c->up_fwd;
        size_t wrote;
        progress = write_buf(c->ufd, &c->u_wr, &c->cin, n, &wrote, &fail);
        c->up_fwd -= wrote;
        if (progress) up_advance(c);
    } else if (c->up == UP_TUNNEL && c->dn == DN_TUNNEL && !c->tcp_wait) {
        size_t wrote;
        progress = write_buf(c->ufd, &c->u_wr, &c->cin, wbuf_len(&c->cin), &wrote, &fail);
        if (!fail && c->c_eof && wbuf_len(&c->cin) == 0 && !c->u_shut) {
            shutdown(c->ufd, SHUT_WR);
            c->u_shut = true;
            progress = true;
        }
    }
    if (fail) {
        if (c->dn == DN_HEAD && !c->resp_started && upstream_retry(c)) return true;
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
            size_t avail = wbuf_len(&c->uin), used = 0;
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
        c->dn_fwd = wbuf_len(&c->uin);
        if (c->dn_fwd || !c->u_eof) return;
        break;
    default:
        break;
    }
    response_done(c);
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
                conn_wait_next(c);
            } else {
                start_linger(c);
                return true;
            }
        }
    } else if (c->dn == DN_HEAD || c->dn == DN_BODY) {
        if (c->dn == DN_BODY) dn_advance(c);
        if (c->dead || (c->dn != DN_BODY && c->dn != DN_HEAD)) return true;
        size_t n = wbuf_len(&c->uin);
        if (n > c->dn_fwd) n = (size_t)c->dn_fwd;
        size_t wrote;
        progress = write_buf(c->cfd, &c->c_wr, &c->uin, n, &wrote, &fail);
        c->dn_fwd -= wrote;
        atomic_fetch_add_explicit(&c->w->st.bytes_out, wrote, memory_order_relaxed);
        if (progress && c->dn == DN_BODY) dn_advance(c);
    } else if (c->dn == DN_TUNNEL) {
        size_t n = c->dn_fwd ? (c->dn_fwd < wbuf_len(&c->uin) ? c->dn_fwd : wbuf_len(&c->uin))
                             : wbuf_len(&c->uin);
        size_t wrote;
        progress = write_buf(c->cfd, &c->c_wr, &c->uin, n, &wrote, &fail);
        if (c->dn_fwd) c->dn_fwd -= wrote;
        atomic_fetch_add_explicit(&c->w->st.bytes_out, wrote, memory_order_relaxed);
        if (!fail && c->u_eof && wbuf_len(&c->uin) == 0 && !c->c_shut) {
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
        if (c->up == UP_HEAD) request_try_head(c);
        if (c->dead) return;
        if (c->up == UP_HEAD && c->c_eof && c->dn == DN_IDLE) {
            conn_kill(c, NULL); /* end of a keep-alive connection, or a partial head */
            return;
        }
        p |= to_upstream(c);
        if (c->dead) return;
        p |= upstream_in(c);
        if (c->dead) return;
        response_try_head(c);
        if (c->dead) return;
        p |= to_client(c);
        if (c->dead) return;
        if (c->up == UP_SEND && c->c_eof && wbuf_len(&c->cin) == 0 && !c->u_extra) {
            conn_kill(c, "client closed mid-request");
            return;
        }
        if (c->dn == DN_BODY && c->u_eof && wbuf_len(&c->uin) == 0 && c->dn_fwd > 0 &&
            !c->c_extra) {
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

/* What a failed connect to the app (its SO_ERROR) says to the client. */
static const char *connect_error(int soerr)
{
    switch (soerr) {
    case ECONNREFUSED:
        return "the app refused the connection";
    case EHOSTUNREACH:
    case ENETUNREACH:
        return "the app's address is unreachable";
    case ETIMEDOUT:
        return "connecting to the app timed out";
    default:
        return "cannot connect to the app";
    }
}

static void on_event(conn *c, int kind, uint32_t events)
{
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
                upstream_failed(c, 502, connect_error(soerr));
                conn_run(c);
                return;
            }
            if (getpeername(c->ufd, (struct sockaddr *)&peer, &pl) != 0)
                return; /* still connecting */
            c->u_connecting = false;
            if (c->deadline_kind == DL_CONNECT) c->deadline_kind = DL_NONE;
            if (c->tcp_wait) upstream_tcp_connected(c);
        }
        if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) c->u_rd = true;
        if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) c->u_hup = true;
        if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) c->u_wr = true;
    }
    conn_run(c);
}

static void on_deadline(conn *c)
{
    int kind = c->deadline_kind;
    c->deadline_kind = DL_NONE;
    atomic_fetch_add_explicit(&c->w->st.timeouts, 1, memory_order_relaxed);
    if (kind == DL_HEADER && wbuf_len(&c->cin) > 0 && c->up == UP_HEAD) {
        conn_reply(c, 408, "request head not received in time", NULL, false);
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

/* ---- entry points: the connection's session and route in the log context ---- */

void relay_on_event(conn *c, int kind, uint32_t events)
{
    if (c->dead) return;
    worker *w = c->w;
    if (c->has_route) worker_log_route(w, &c->rt);
    on_event(c, kind, events);
    worker_log_end(w);
}

void relay_on_deadline(conn *c)
{
    if (c->dead || c->deadline_kind == DL_NONE || c->w->now_ms < c->deadline_ms) return;
    worker *w = c->w;
    if (c->has_route) worker_log_route(w, &c->rt);
    on_deadline(c);
    worker_log_end(w);
}

void relay_resume(conn *c)
{
    c->queued = false;
    if (c->dead) {
        /* conn_kill left it off the dead list while it was queued */
        c->next = c->w->dead;
        c->w->dead = c;
        return;
    }
    worker *w = c->w;
    if (c->has_route) worker_log_route(w, &c->rt);
    conn_run(c);
    worker_log_end(w);
}
