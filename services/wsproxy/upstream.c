/* upstream.c: connecting to the app, retrying, failing (upstream.h). */
#include "services/wsproxy/upstream.h"

#include "libcommon/log.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

bool upstream_connect(conn *c)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    char port[8];
    snprintf(port, sizeof(port), "%d", c->u_port);
    hints.ai_flags |= AI_NUMERICHOST;
    int rc = getaddrinfo(c->u_host, port, &hints, &res);
    if (rc == EAI_NONAME) {
        hints.ai_flags &= ~AI_NUMERICHOST; /* a name: resolved here (blocking) */
        rc = getaddrinfo(c->u_host, port, &hints, &res);
    }
    if (rc != 0 || !res) {
        TLOG_WARN("app address unresolvable", "target=%s:%d error=\"%s\"", c->u_host, c->u_port,
                  gai_strerror(rc));
        return false;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        freeaddrinfo(res);
        return false;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    rc = connect(fd, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    if (rc != 0 && errno != EINPROGRESS) {
        close(fd);
        return false;
    }
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
                             .data.ptr = &c->utag};
    if (epoll_ctl(c->w->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        close(fd);
        return false;
    }
    c->ufd = fd;
    c->u_connecting = rc != 0;
    c->u_wr = rc == 0;
    c->u_rd = c->u_hup = false;
    c->u_eof = c->u_reused = c->u_shut = false;
    if (c->u_connecting) {
        c->deadline_kind = DL_CONNECT;
        c->deadline_ms = c->w->now_ms + c->w->cfg->connect_timeout_ms;
    }
    if (!c->uin.p) {
        c->uin.p = ts_malloc(c->w->cfg->buffer_size);
        c->uin.cap = c->w->cfg->buffer_size;
    }
    return true;
}

void upstream_failed(conn *c, int status, const char *why)
{
    atomic_fetch_add_explicit(&c->w->st.upstream_errors, 1, memory_order_relaxed);
    TLOG_INFO("app connection failed", "app=%s target=%s:%d why=\"%s\"",
              c->has_route ? c->rt.app : "", c->u_host, c->u_port, why);
    if ((c->dn == DN_HEAD && !c->resp_started) || c->tcp_wait) {
        if (c->tcp_wait) atomic_fetch_sub_explicit(&c->w->st.tunnels, 1, memory_order_relaxed);
        c->tcp_wait = false;
        conn_close_upstream(c);
        conn_reply(c, status, why, NULL, false);
        return;
    }
    conn_kill(c, why);
}

bool upstream_retry(conn *c)
{
    if (!c->u_reused || !c->resend || c->resend_tries > 0 || c->resp_started) return false;
    conn_close_upstream(c);
    c->resend_tries++;
    if (!upstream_connect(c)) return false;
    char *copy = ts_malloc(c->resend_len);
    memcpy(copy, c->resend, c->resend_len);
    conn_set_extra(&c->u_extra, &c->u_extra_len, &c->u_extra_off, copy, c->resend_len);
    return true;
}

void upstream_tcp_connected(conn *c)
{
    static const char k101[] = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                               "Upgrade: tessera-tcp\r\n\r\n";
    c->tcp_wait = false;
    c->resp_started = true;
    conn_set_extra(&c->c_extra, &c->c_extra_len, &c->c_extra_off, ts_strdup(k101),
                   sizeof(k101) - 1);
}
