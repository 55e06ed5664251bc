/* conn.h: one proxied client connection: its sockets, its two fixed buffers,
 * the state of the request in flight, and the operations every stage needs
 * (buffers, the proxy's own reply, closing). The stages over it:
 *   request.c   a request head: parse, authorize (access.c), rewrite, route
 *   upstream.c  the connection to the app: connect, retry, failure
 *   response.c  the app's response head: 101 checks, the app cookie, the end
 *               of a request
 *   relay.c     moving bytes both ways and the per-connection loop that proxy.c
 *               drives from epoll events and timers
 * All of it runs on the connection's worker thread (worker.h). */
#ifndef WSPROXY_CONN_H
#define WSPROXY_CONN_H

#include "libcommon/http1.h"
#include "services/wsproxy/routes.h"
#include "services/wsproxy/worker.h"
#include "services/wsproxy/ws_use.h"
#include "libcommon/wsframe.h"

typedef struct wbuf {
    char *p;
    size_t cap, rd, wr; /* data in [rd, wr) */
} wbuf;

enum up_phase { UP_HEAD = 0, UP_SEND, UP_DONE, UP_TUNNEL };
enum dn_phase { DN_IDLE = 0, DN_HEAD, DN_BODY, DN_TUNNEL, DN_LOCAL };
enum deadline_kind { DL_NONE = 0, DL_HEADER, DL_IDLE, DL_CONNECT, DL_LINGER };

struct conn {
    worker *w;
    conn *prev, *next;
    ep_tag ctag, utag;
    int cfd, ufd;
    bool c_rd, c_wr, u_rd, u_wr; /* edge-triggered readiness */
    bool c_hup, u_hup;           /* the peer's FIN (or an error) was signalled */
    bool c_eof, u_eof, u_connecting, u_reused, c_shut, u_shut, dead;
    bool lingering; /* after an error reply: reading and dropping until EOF */
    bool tcp_wait;  /* tcp app: our 101 goes out once the app accepted */
    bool queued;    /* on the worker's run-again list */
    conn *again;
    wbuf cin, uin;
    /* bytes to write before the buffered ones: our own heads and pages */
    char *c_extra, *u_extra;
    size_t c_extra_len, c_extra_off, u_extra_len, u_extra_off;
    /* the request in flight */
    int up, dn;
    size_t head_scan;
    h1_body up_body, dn_body;
    h1_chunked up_ch, dn_ch;
    uint64_t up_fwd, dn_fwd;
    bool up_chunk_done, dn_chunk_done;
    bool req_head_method, req_keepalive, req_upgrade, req_ws, req_tcp, req_http10;
    bool req_html; /* the request's Accept names text/html: a browser gets pages */
    bool resp_started, resp_keepalive, local_keepalive;
    char ws_accept[WSF_ACCEPT_LEN + 1];
    ws_use wsu;       /* a WebSocket tunnel: which client bytes are use (data frames) */
    char *set_cookie; /* "Set-Cookie: ...\r\n" lines for the response */
    char *resend;     /* the request head, kept until the response starts */
    size_t resend_len;
    int resend_tries;
    /* where it goes */
    bool has_route;
    route rt;
    char u_host[ROUTE_HOST_MAX + 1];
    int u_port;
    int64_t deadline_ms;
    int deadline_kind;
    int64_t seen_ms; /* last liveness check of the route's session */
    char client_ip[48];
};

/* ---- buffers ---- */
static inline size_t wbuf_len(const wbuf *b)
{
    return b->wr - b->rd;
}
void wbuf_consume(wbuf *b, size_t n);
/* Room at the end, compacting when the front has been consumed. */
size_t wbuf_room(wbuf *b);
/* *dst := s (heap, n bytes, taken), the old one freed: c_extra or u_extra. */
void conn_set_extra(char **dst, size_t *len, size_t *off, char *s, size_t n);

/* A connection accepted on w (not yet on its live list). */
conn *conn_new(worker *w, int fd, const char *client_ip);
/* Our own reply (reply.h) instead of the app's; keepalive only for requests
 * without a body. */
void conn_reply(conn *c, int status, const char *detail, const char *extra_headers, bool keepalive);
/* The next request may come: wait for its head (or idle). */
void conn_wait_next(conn *c);
/* Close the connection to the app (the client's stays). */
void conn_close_upstream(conn *c);
/* Close both sides now; the memory goes at the end of the event batch. */
void conn_kill(conn *c, const char *why);
void conn_free(conn *c);

#endif
