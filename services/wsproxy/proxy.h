/* proxy.h: the app proxy: N worker threads, each with its own SO_REUSEPORT
 * listener and epoll instance, owning its connections from accept to close
 * (no locks on the data path). See docs/wsproxy.md for the behaviour.
 *
 * Other threads talk to the workers only through proxy_revoke() (a queue and
 * an eventfd) and proxy_take_touched() (sessions used, for last_access). */
#ifndef WSPROXY_PROXY_H
#define WSPROXY_PROXY_H

#include "services/wsproxy/proxy_config.h"

#include <stdio.h>

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
