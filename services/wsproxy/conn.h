/* conn.h: one proxied client connection and the worker that owns it.
 * proxy.c runs the event loop and timers; conn.c moves bytes and decides
 * (HTTP/1.1 framing, upgrades, tunnels); access.c authorizes each request. */
#ifndef WSPROXY_CONN_H
#define WSPROXY_CONN_H

#include "libcommon/http1.h"
#include "services/wsproxy/proxy.h"
#include "services/wsproxy/routes.h"
#include "services/wsproxy/wsframe.h"

#include <pthread.h>
#include <stdatomic.h>

typedef struct conn conn;
typedef struct worker worker;

enum { TAG_LISTEN = 1, TAG_EVENT, TAG_CLIENT, TAG_UPSTREAM };

typedef struct ep_tag {
    int kind;
    conn *c;
} ep_tag;

typedef struct wp_stats {
    atomic_uint_fast64_t accepted, requests, upgrades, tcp_tunnels, local_replies, auth_refused,
        upstream_errors, bad_requests, timeouts, revoked, bytes_in, bytes_out;
    atomic_int_fast64_t active, tunnels;
} wp_stats;

#define WP_TOUCH_SLOTS 256

struct worker {
    int id;
    pthread_t thread;
    proxy *px;
    const proxy_config *cfg;
    int ep, lfd, efd;
    ep_tag ltag, etag;
    conn *live;  /* doubly linked */
    conn *dead;  /* freed after each batch of events */
    conn *again; /* stopped for fairness with work left: run after the batch */
    int n_conns;
    route_cache *cache;
    rds *rd;
    int64_t now_ms; /* monotonic, updated once per loop turn */
    int64_t last_scan_ms, last_check_ms;
    atomic_bool stop;
    /* from other threads, under mu */
    pthread_mutex_t mu;
    char (*revoked)[ROUTE_ID_MAX + 1];
    int n_revoked, cap_revoked;
    char (*touched)[ROUTE_ID_MAX + 1];
    int n_touched, cap_touched;
    /* owner thread only: session hash -> second last marked as touched */
    uint64_t touch_key[WP_TOUCH_SLOTS];
    int64_t touch_sec[WP_TOUCH_SLOTS];
    wp_stats st;
};

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

/* conn.c */
conn *conn_new(worker *w, int fd, const char *client_ip);
void conn_on_event(conn *c, int kind, uint32_t events);
void conn_on_deadline(conn *c);
/* Run the state machine (a connection on the run-again list). */
void conn_resume(conn *c);
/* Close both sides now; the memory goes at the end of the event batch. */
void conn_kill(conn *c, const char *why);
void conn_free(conn *c);

/* proxy.c, for conn.c */
void worker_touch(worker *w, const char *session_id);
rds *worker_redis(worker *w);

/* access.c: who may pass. */
typedef enum acc_result {
    ACC_OK = 0,
    ACC_UNKNOWN,     /* 401: no token or cookie, unknown or expired */
    ACC_FOREIGN,     /* 403: a token/cookie for another app, user or session */
    ACC_AMBIGUOUS,   /* 409: several apps' cookies on one address */
    ACC_UNAVAILABLE, /* 503: Redis failed */
} acc_result;

typedef struct acc_decision {
    acc_result res;
    route rt;
    bool via_token;   /* authorized by ?token= */
    char *set_cookie; /* heap "Set-Cookie: ...\r\n" lines to send, or NULL */
    const char *why;  /* for the log */
} acc_decision;

void access_decide(worker *w, const h1_msg *m, acc_decision *d);

#endif
