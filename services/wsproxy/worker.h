/* worker.h: one proxy worker thread's state, which the modules running its
 * connections share: its epoll instance, its connections, its route cache and
 * Redis connection, its counters, and the queues other threads fill (under
 * mu). proxy.c creates the workers and runs their loops; relay.c and the
 * modules under it work on one connection at a time, on the worker's thread. */
#ifndef WSPROXY_WORKER_H
#define WSPROXY_WORKER_H

#include "services/wsproxy/proxy_config.h"
#include "services/wsproxy/routes.h"

#include <pthread.h>
#include <stdatomic.h>

typedef struct conn conn;
typedef struct worker worker;

/* What an epoll event is about (epoll_event.data.ptr). */
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
    bool log_ctx; /* a connection's session and route are in the log context */
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

/* The worker's Redis connection (made on first use); NULL when Redis is
 * unavailable (logged). */
rds *worker_redis(worker *w);
/* The session was used: queued for last_access at most once a second. */
void worker_touch(worker *w, const char *session_id);
/* The log context names a route's session and the route (its app hash) until
 * worker_log_end. */
void worker_log_route(worker *w, const route *rt);
void worker_log_end(worker *w);

#endif
