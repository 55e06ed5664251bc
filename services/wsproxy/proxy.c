/* proxy.c: listeners, worker threads and their event loops (proxy.h). */
#include "services/wsproxy/proxy.h"

#include "libcommon/log.h"
#include "libcommon/metrics.h"
#include "services/wsproxy/conn.h"
#include "services/wsproxy/relay.h"
#include "services/wsproxy/worker.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_EVENTS 256
#define SCAN_INTERVAL_MS 100
#define CHECK_INTERVAL_MS 1000

struct proxy {
    proxy_config cfg;
    worker *workers;
    int n_workers;
    char addr[128];
    int port;
};

/* ---- listeners ------------------------------------------------------------- */

static bool split_listen(const char *listen, char *host, size_t hcap, char *port, size_t pcap)
{
    const char *colon = strrchr(listen, ':');
    if (!colon) return false;
    size_t hl = (size_t)(colon - listen);
    if (hl >= hcap || strlen(colon + 1) >= pcap) return false;
    if (hl >= 2 && listen[0] == '[' && listen[hl - 1] == ']') {
        memcpy(host, listen + 1, hl - 2);
        host[hl - 2] = '\0';
    } else {
        memcpy(host, listen, hl);
        host[hl] = '\0';
    }
    strcpy(port, colon + 1);
    return true;
}

static int bind_one(const struct addrinfo *ai, bool reuseport, ts_err *err)
{
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        ts_err_set(err, "socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (reuseport) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        ts_err_set(err, "bind: %s", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* One SO_REUSEPORT listener per worker on the same port. A plain bind first
 * proves the port is free: SO_REUSEPORT alone would quietly share a port
 * with another wsproxy of the same user. Unless the port is shared on
 * purpose (listen_shared: the instances of a replicated wsproxy), which
 * needs a fixed port. */
static bool bind_listeners(proxy *p, ts_err *err)
{
    char host[128], port[16];
    if (!split_listen(p->cfg.listen, host, sizeof(host), port, sizeof(port))) {
        ts_err_set(err, "wsproxy.listen: expected host:port, got '%s'", p->cfg.listen);
        return false;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
    if (rc != 0 || !res) {
        ts_err_set(err, "wsproxy.listen %s: %s", p->cfg.listen, gai_strerror(rc));
        return false;
    }
    int bound_port = atoi(port);
    if (p->cfg.listen_shared && bound_port == 0) {
        ts_err_set(err, "wsproxy.listen %s: wsproxy.listen_shared needs a fixed port",
                   p->cfg.listen);
        freeaddrinfo(res);
        return false;
    }
    if (!p->cfg.listen_shared) {
        int probe = bind_one(res, false, err);
        if (probe < 0) {
            ts_err_prefix(err, "wsproxy.listen %s", p->cfg.listen);
            freeaddrinfo(res);
            return false;
        }
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        getsockname(probe, (struct sockaddr *)&ss, &sl);
        bound_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                    : ((struct sockaddr_in *)&ss)->sin_port);
        close(probe);
    }
    /* The same port for everyone (port 0 picked one). */
    if (res->ai_family == AF_INET6)
        ((struct sockaddr_in6 *)res->ai_addr)->sin6_port = htons((uint16_t)bound_port);
    else
        ((struct sockaddr_in *)res->ai_addr)->sin_port = htons((uint16_t)bound_port);
    for (int i = 0; i < p->n_workers; i++) {
        int fd = bind_one(res, true, err);
        if (fd < 0 || listen(fd, 1024) != 0) {
            if (fd >= 0) ts_err_set(err, "listen: %s", strerror(errno));
            ts_err_prefix(err, "wsproxy.listen %s", p->cfg.listen);
            if (fd >= 0) close(fd);
            for (int j = 0; j < i; j++)
                close(p->workers[j].lfd);
            freeaddrinfo(res);
            return false;
        }
        p->workers[i].lfd = fd;
    }
    freeaddrinfo(res);
    p->port = bound_port;
    if (strchr(host, ':'))
        snprintf(p->addr, sizeof(p->addr), "[%s]:%d", host, bound_port);
    else
        snprintf(p->addr, sizeof(p->addr), "%s:%d", host[0] ? host : "0.0.0.0", bound_port);
    return true;
}

/* ---- the loop ----------------------------------------------------------------- */

static void accept_all(worker *w)
{
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int fd = accept4(w->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                TLOG_WARN("accept failed", "worker=%d error=\"%s\"", w->id, strerror(errno));
            return;
        }
        if (w->n_conns >= w->cfg->max_connections) {
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        char ip[64] = "?";
        if (ss.ss_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, ip, sizeof(ip));
        else if (ss.ss_family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, ip, sizeof(ip));
        conn *c = conn_new(w, fd, ip);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
                                 .data.ptr = &c->ctag};
        if (epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
            close(fd);
            c->cfd = -1;
            conn_free(c);
            continue;
        }
        c->next = w->live;
        if (w->live) w->live->prev = c;
        w->live = c;
        w->n_conns++;
        atomic_fetch_add_explicit(&w->st.accepted, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&w->st.active, 1, memory_order_relaxed);
    }
}

static void close_session(worker *w, const char *sid)
{
    route_cache_drop_session(w->cache, sid);
    for (conn *c = w->live, *next; c; c = next) {
        next = c->next;
        if (c->has_route && strcmp(c->rt.session_id, sid) == 0) {
            atomic_fetch_add_explicit(&w->st.revoked, 1, memory_order_relaxed);
            worker_log_route(w, &c->rt);
            TLOG_INFO("app connection closed: session routes removed", "client=%s", c->client_ip);
            conn_kill(c, "revoked");
            worker_log_end(w);
        }
    }
}

static void take_revocations(worker *w)
{
    uint64_t v;
    while (read(w->efd, &v, sizeof(v)) == sizeof(v)) {
    }
    pthread_mutex_lock(&w->mu);
    int n = w->n_revoked;
    char(*list)[ROUTE_ID_MAX + 1] = w->revoked;
    w->revoked = NULL;
    w->n_revoked = w->cap_revoked = 0;
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < n; i++)
        close_session(w, list[i]);
    free(list);
}

/* Once a second: is each proxied session still there? (The pub/sub message
 * is the fast path; this catches one that was missed.) */
static void check_sessions(worker *w)
{
    for (conn *c = w->live, *next; c; c = next) {
        next = c->next;
        if (!c->has_route || w->now_ms - c->seen_ms < CHECK_INTERVAL_MS) continue;
        bool alive = true;
        if (!route_cache_session(w->cache, c->rt.session_id, w->now_ms, &alive)) {
            rds *rd = worker_redis(w);
            ts_err err;
            if (!rd || !routes_session_alive(rd, c->rt.session_id, &alive, &err))
                continue; /* keep */
            route_cache_put_session(w->cache, c->rt.session_id, alive, w->now_ms);
        }
        c->seen_ms = w->now_ms;
        if (!alive) {
            close_session(w, c->rt.session_id);
            next = w->live; /* killed ones left the list; the checked ones are skipped */
        }
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    char name[16];
    snprintf(name, sizeof(name), "wsproxy-w%d", w->id);
    pthread_setname_np(pthread_self(), name);
    struct epoll_event evs[MAX_EVENTS];
    w->now_ms = ts_now_mono_ms();
    w->last_scan_ms = w->last_check_ms = w->now_ms;
    while (!atomic_load(&w->stop)) {
        int timeout = w->again ? 0 : SCAN_INTERVAL_MS;
        int n = epoll_wait(w->ep, evs, MAX_EVENTS, timeout);
        w->now_ms = ts_now_mono_ms();
        for (int i = 0; i < n; i++) {
            ep_tag *t = evs[i].data.ptr;
            if (t->kind == TAG_LISTEN)
                accept_all(w);
            else if (t->kind == TAG_EVENT)
                take_revocations(w);
            else
                relay_on_event(t->c, t->kind, evs[i].events);
        }
        conn *again = w->again;
        w->again = NULL;
        while (again) {
            conn *c = again;
            again = c->again;
            c->again = NULL;
            relay_resume(c);
        }
        if (w->now_ms - w->last_scan_ms >= SCAN_INTERVAL_MS) {
            w->last_scan_ms = w->now_ms;
            for (conn *c = w->live, *next; c; c = next) {
                next = c->next;
                if (c->deadline_kind != DL_NONE && w->now_ms >= c->deadline_ms)
                    relay_on_deadline(c);
            }
        }
        if (w->now_ms - w->last_check_ms >= CHECK_INTERVAL_MS) {
            w->last_check_ms = w->now_ms;
            check_sessions(w);
        }
        while (w->dead) {
            conn *c = w->dead;
            w->dead = c->next;
            conn_free(c);
        }
    }
    for (conn *c = w->live, *next; c; c = next) {
        next = c->next;
        conn_kill(c, "stopping");
    }
    while (w->dead) {
        conn *c = w->dead;
        w->dead = c->next;
        conn_free(c);
    }
    return NULL;
}

/* ---- start / stop -------------------------------------------------------------- */

proxy *proxy_start(const proxy_config *cfg, ts_err *err)
{
    proxy *p = ts_calloc(1, sizeof(*p));
    p->cfg = *cfg;
    p->n_workers = cfg->workers > 0 ? cfg->workers : 1;
    p->workers = ts_calloc((size_t)p->n_workers, sizeof(worker));
    if (!bind_listeners(p, err)) {
        free(p->workers);
        free(p);
        return NULL;
    }
    for (int i = 0; i < p->n_workers; i++) {
        worker *w = &p->workers[i];
        w->id = i;
        w->cfg = &p->cfg;
        w->ep = epoll_create1(EPOLL_CLOEXEC);
        w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        w->ltag = (ep_tag){TAG_LISTEN, NULL};
        w->etag = (ep_tag){TAG_EVENT, NULL};
        w->cache = route_cache_new(4096, cfg->cache_ttl_ms);
        pthread_mutex_init(&w->mu, NULL);
        /* Level-triggered listener: accept_all takes what is there each time. */
        struct epoll_event lev = {.events = EPOLLIN, .data.ptr = &w->ltag};
        struct epoll_event eev = {.events = EPOLLIN, .data.ptr = &w->etag};
        if (w->ep < 0 || w->efd < 0 || epoll_ctl(w->ep, EPOLL_CTL_ADD, w->lfd, &lev) != 0 ||
            epoll_ctl(w->ep, EPOLL_CTL_ADD, w->efd, &eev) != 0)
            ts_panic("wsproxy worker %d: epoll setup failed: %s", i, strerror(errno));
    }
    for (int i = 0; i < p->n_workers; i++)
        if (pthread_create(&p->workers[i].thread, NULL, worker_main, &p->workers[i]) != 0)
            ts_panic("wsproxy: cannot start worker thread %d", i);
    TLOG_INFO("app proxy listening", "addr=%s workers=%d", p->addr, p->n_workers);
    return p;
}

const char *proxy_addr(const proxy *p)
{
    return p->addr;
}

int proxy_port(const proxy *p)
{
    return p->port;
}

void proxy_stop(proxy *p)
{
    if (!p) return;
    for (int i = 0; i < p->n_workers; i++) {
        atomic_store(&p->workers[i].stop, true);
        uint64_t one = 1;
        if (write(p->workers[i].efd, &one, sizeof(one)) < 0) {
        }
    }
    for (int i = 0; i < p->n_workers; i++) {
        worker *w = &p->workers[i];
        pthread_join(w->thread, NULL);
        close(w->lfd);
        close(w->ep);
        close(w->efd);
        route_cache_free(w->cache);
        free(w->revoked);
        free(w->touched);
        pthread_mutex_destroy(&w->mu);
    }
    free(p->workers);
    free(p);
}

void proxy_revoke(proxy *p, const char *session_id)
{
    for (int i = 0; i < p->n_workers; i++) {
        worker *w = &p->workers[i];
        pthread_mutex_lock(&w->mu);
        if (w->n_revoked == w->cap_revoked) {
            w->cap_revoked = w->cap_revoked ? w->cap_revoked * 2 : 8;
            w->revoked = ts_realloc(w->revoked, (size_t)w->cap_revoked * sizeof(*w->revoked));
        }
        ts_strlcpy(w->revoked[w->n_revoked++], session_id, ROUTE_ID_MAX + 1);
        pthread_mutex_unlock(&w->mu);
        uint64_t one = 1;
        if (write(w->efd, &one, sizeof(one)) < 0) {
        }
    }
}

void proxy_take_touched(proxy *p, void (*fn)(void *ctx, const char *session_id), void *ctx)
{
    for (int i = 0; i < p->n_workers; i++) {
        worker *w = &p->workers[i];
        pthread_mutex_lock(&w->mu);
        int n = w->n_touched;
        char(*list)[ROUTE_ID_MAX + 1] = w->touched;
        w->touched = NULL;
        w->n_touched = w->cap_touched = 0;
        pthread_mutex_unlock(&w->mu);
        for (int k = 0; k < n; k++)
            fn(ctx, list[k]);
        free(list);
    }
}

/* ---- metrics -------------------------------------------------------------------- */

void proxy_metrics(FILE *out, void *arg)
{
    proxy *p = arg;
    if (!p) return;
    static const struct {
        const char *name, *help;
        size_t off;
    } counters[] = {
        {"tessera_wsproxy_connections_total", "Client connections accepted.",
         offsetof(wp_stats, accepted)},
        {"tessera_wsproxy_requests_total", "Request heads received.", offsetof(wp_stats, requests)},
        {"tessera_wsproxy_upgrades_total",
         "Connections switched to a tunnel by a 101 from the app.", offsetof(wp_stats, upgrades)},
        {"tessera_wsproxy_tcp_tunnels_total", "TCP app tunnels opened.",
         offsetof(wp_stats, tcp_tunnels)},
        {"tessera_wsproxy_local_replies_total",
         "Replies the proxy wrote itself (errors, redirects).", offsetof(wp_stats, local_replies)},
        {"tessera_wsproxy_auth_refused_total",
         "Requests refused for a bad, foreign or missing token or cookie.",
         offsetof(wp_stats, auth_refused)},
        {"tessera_wsproxy_upstream_errors_total", "Failed or broken connections to apps.",
         offsetof(wp_stats, upstream_errors)},
        {"tessera_wsproxy_bad_requests_total", "Malformed requests (400, 431, ...).",
         offsetof(wp_stats, bad_requests)},
        {"tessera_wsproxy_timeouts_total", "Connections ended by a timeout.",
         offsetof(wp_stats, timeouts)},
        {"tessera_wsproxy_revoked_total",
         "Connections closed because their session's routes were removed.",
         offsetof(wp_stats, revoked)},
        {"tessera_wsproxy_received_bytes_total", "Bytes received from clients.",
         offsetof(wp_stats, bytes_in)},
        {"tessera_wsproxy_sent_bytes_total", "Bytes sent to clients from apps.",
         offsetof(wp_stats, bytes_out)},
    };
    for (size_t k = 0; k < TS_ARRAY_LEN(counters); k++) {
        uint64_t s = 0;
        for (int i = 0; i < p->n_workers; i++)
            s += atomic_load_explicit(
                (atomic_uint_fast64_t *)((char *)&p->workers[i].st + counters[k].off),
                memory_order_relaxed);
        metrics_family(out, counters[k].name, "counter", counters[k].help);
        metrics_sample_u64(out, counters[k].name, NULL, s);
    }
    int64_t active = 0, tunnels = 0;
    for (int i = 0; i < p->n_workers; i++) {
        active += atomic_load_explicit(&p->workers[i].st.active, memory_order_relaxed);
        tunnels += atomic_load_explicit(&p->workers[i].st.tunnels, memory_order_relaxed);
    }
    metrics_family(out, "tessera_wsproxy_connections_active", "gauge",
                   "Client connections open now.");
    metrics_sample(out, "tessera_wsproxy_connections_active", NULL, (double)active);
    metrics_family(out, "tessera_wsproxy_tunnels_active", "gauge",
                   "WebSocket and TCP tunnels open now.");
    metrics_sample(out, "tessera_wsproxy_tunnels_active", NULL, (double)tunnels);
}
