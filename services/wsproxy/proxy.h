/* proxy.h: the app proxy: N worker threads, each with its own SO_REUSEPORT
 * listener and epoll instance, owning its connections from accept to close
 * (no locks on the data path). See docs/wsproxy.md for the behaviour.
 *
 * Other threads talk to the workers only through proxy_revoke() (a queue and
 * an eventfd) and proxy_take_touched() (sessions used, for last_access). */
#ifndef WSPROXY_PROXY_H
#define WSPROXY_PROXY_H

#include "libcommon/common.h"
#include "libcommon/rds.h"

#include <stdio.h>

typedef struct proxy_config {
    const char *listen;         /* host:port; port 0 picks a free one */
    int workers;                /* >= 1 */
    size_t max_header;          /* largest request head; larger: 431 */
    size_t buffer_size;         /* per direction per connection */
    int64_t header_timeout_ms;  /* from accept / first byte to a complete head */
    int64_t idle_timeout_ms;    /* keep-alive wait for the next request */
    int64_t connect_timeout_ms; /* to the app */
    int64_t cookie_ttl_ms;      /* cookie minted from a token */
    int64_t cache_ttl_ms;       /* route and liveness cache (<= 1000) */
    int max_connections;        /* per worker */
    bool subdomain_mode;        /* public URL has "*": apps by Host */
    bool secure_cookies;        /* public URL is https */
    /* A Redis connection for the calling thread (each worker asks once); the
     * callback owns it (svc_redis: thread-local, freed at thread exit). */
    rds *(*redis)(void *ctx, ts_err *err);
    void *redis_ctx;
} proxy_config;

typedef struct proxy proxy;

/* Bind the listeners (all workers on one port) and start the threads. */
proxy *proxy_start(const proxy_config *cfg, ts_err *err);
/* "host:port" actually bound. */
const char *proxy_addr(const proxy *p);
int proxy_port(const proxy *p);
/* Stop accepting, close every connection, join the threads. */
void proxy_stop(proxy *p);

/* Close the connections of a session now (any thread). */
void proxy_revoke(proxy *p, const char *session_id);

/* Sessions used since the last call, deduplicated per worker per second:
 * calls fn once per (worker, session). */
void proxy_take_touched(proxy *p, void (*fn)(void *ctx, const char *session_id), void *ctx);

/* Prometheus families for /metrics. */
void proxy_metrics(FILE *out, void *p);

#endif
