/* app_tunnel.c: local TCP connections tunnelled through tessera-wsproxy
 * (app_tunnel.h). */
#include "services/cli/app_tunnel.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define HEAD_MAX 8192
#define BUF_SIZE 65536
#define CONNECT_TIMEOUT_MS 10000

static volatile sig_atomic_t g_stop;

static void _on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

bool app_tunnel_listen(const char *spec, int *out_fd, char *bound, size_t size, ts_err *err)
{
    char host[256] = "127.0.0.1";
    const char *port_s = spec;
    const char *colon = strrchr(spec, ':');
    if (colon) {
        size_t hlen = (size_t)(colon - spec);
        const char *h = spec;
        if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') {
            h++;
            hlen -= 2;
        }
        if (hlen == 0 || hlen >= sizeof(host)) {
            ts_err_set(err, "--bind '%s' is not [HOST:]PORT", spec);
            return false;
        }
        memcpy(host, h, hlen);
        host[hlen] = '\0';
        port_s = colon + 1;
    }
    char *end = NULL;
    long port = strtol(port_s, &end, 10);
    if (!*port_s || *end || port < 0 || port > 65535) {
        ts_err_set(err, "--bind '%s': the port must be a number from 0 to 65535", spec);
        return false;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV},
                    *ai = NULL;
    int rc = getaddrinfo(host, port_s, &hints, &ai);
    if (rc != 0) {
        ts_err_set(err, "cannot listen on %s: %s", spec, gai_strerror(rc));
        return false;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 64) != 0) {
        ts_err_set(err, "cannot listen on %s:%ld: %s", host, port, strerror(errno));
        if (fd >= 0) close(fd);
        freeaddrinfo(ai);
        return false;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char name[INET6_ADDRSTRLEN] = "?";
    int bport = (int)port;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &s6->sin6_addr, name, sizeof(name));
            bport = ntohs(s6->sin6_port);
        } else {
            struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &s4->sin_addr, name, sizeof(name));
            bport = ntohs(s4->sin_port);
        }
    }
    snprintf(bound, size, ss.ss_family == AF_INET6 ? "[%s]:%d" : "%s:%d", name, bport);
    *out_fd = fd;
    return true;
}

/* url = http://HOST[:PORT]/PATH -> host, port, path ("/..."). */
static bool _split_url(const char *url, char *host, size_t hsize, char *port, size_t psize,
                       const char **path, ts_err *err)
{
    if (strncmp(url, "http://", 7) != 0) {
        ts_err_set(err,
                   "--bind needs tessera-wsproxy's public URL to be http:// (the app's URL is "
                   "'%.60s'); open a TLS tunnel to wsproxy yourself, or ask the operator for a "
                   "plain-HTTP wsproxy address",
                   url);
        return false;
    }
    const char *a = url + 7;
    size_t alen = strcspn(a, "/?#");
    *path = a[alen] ? a + alen : "/";
    const char *hs = a, *he;
    if (*a == '[') {
        hs = a + 1;
        he = memchr(a, ']', alen);
        if (!he) goto bad;
    } else {
        he = memchr(a, ':', alen);
        if (!he) he = a + alen;
    }
    const char *pc = *a == '[' ? he + 1 : he;
    size_t hl = (size_t)(he - hs);
    if (hl == 0 || hl >= hsize) goto bad;
    memcpy(host, hs, hl);
    host[hl] = '\0';
    if (pc < a + alen && *pc == ':') {
        size_t pl = (size_t)(a + alen - pc - 1);
        if (pl == 0 || pl >= psize) goto bad;
        memcpy(port, pc + 1, pl);
        port[pl] = '\0';
    } else {
        ts_strlcpy(port, "80", psize);
    }
    return true;
bad:
    ts_err_set(err, "the app's URL '%.80s' is not http://HOST[:PORT]/...", url);
    return false;
}

bool app_tunnel_url_ok(const char *url, ts_err *err)
{
    char host[256], port[16];
    const char *path;
    return _split_url(url, host, sizeof(host), port, sizeof(port), &path, err);
}

static bool _write_all(int fd, const char *b, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        b += w;
        n -= (size_t)w;
    }
    return true;
}

/* The name to resolve for host: a name under .localhost (wsproxy's default
 * per-app host names, <hash>.apps.localhost) is the loopback address (RFC
 * 6761 6.3), as browsers and libcurl take it; glibc without nss-myhostname
 * does not know it. */
static const char *_resolvable(const char *host)
{
    size_t n = strlen(host);
    if (n > 0 && host[n - 1] == '.') n--;
    if (n > 10 && strncasecmp(host + n - 10, ".localhost", 10) == 0) return "127.0.0.1";
    return host;
}

/* Connect to wsproxy and upgrade to tessera-tcp; the socket, or -1 (said on
 * stderr). Bytes that came after the 101's head go to the client. */
static int _open_tunnel(const char *url, int client)
{
    char host[256], port[16];
    const char *path;
    ts_err err = {{0}};
    if (!_split_url(url, host, sizeof(host), port, sizeof(port), &path, &err)) {
        fprintf(stderr, "tessera app: %s\n", err.msg);
        return -1;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int rc = getaddrinfo(_resolvable(host), port, &hints, &ai);
    if (rc != 0) {
        fprintf(stderr, "tessera app: wsproxy %s:%s: %s\n", host, port, gai_strerror(rc));
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {.tv_sec = CONNECT_TIMEOUT_MS / 1000};
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    }
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        fprintf(stderr, "tessera app: cannot reach wsproxy at %s:%s: %s\n", host, port,
                strerror(errno));
        if (fd >= 0) close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    char *req =
        ts_asprintf("GET %s HTTP/1.1\r\nHost: %s%s%s:%s\r\nConnection: Upgrade\r\n"
                    "Upgrade: tessera-tcp\r\nUser-Agent: tessera-cli\r\n\r\n",
                    path, strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", port);
    bool sent = _write_all(fd, req, strlen(req));
    free(req);
    char head[HEAD_MAX + 1];
    size_t n = 0;
    char *eoh = NULL;
    while (sent && !eoh && n < HEAD_MAX) {
        ssize_t r = recv(fd, head + n, HEAD_MAX - n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (size_t)r;
        head[n] = '\0';
        eoh = strstr(head, "\r\n\r\n");
    }
    int status = 0;
    if (eoh) sscanf(head, "HTTP/1.%*d %d", &status);
    if (status != 101) {
        if (!eoh)
            fprintf(stderr, "tessera app: wsproxy did not answer the tunnel request\n");
        else
            fprintf(stderr, "tessera app: wsproxy refused the tunnel: %.*s%s\n",
                    (int)strcspn(head, "\r\n"), head,
                    status == 401                    ? " (the token expired or the session ended)"
                    : status == 502 || status == 504 ? " (the app is not listening in the session)"
                                                     : "");
        close(fd);
        return -1;
    }
    size_t rest = n - (size_t)(eoh + 4 - head);
    if (rest > 0 && !_write_all(client, eoh + 4, rest)) {
        close(fd);
        return -1;
    }
    struct timeval none = {0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof(none));
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
    return fd;
}

/* Bytes both ways until both directions ended; a half-close is passed on. */
static void _relay(int a, int b)
{
    char *buf = malloc(BUF_SIZE);
    if (!buf) return;
    bool open_a = true, open_b = true; /* reading from a / from b */
    while (open_a || open_b) {
        struct pollfd p[2] = {{.fd = open_a ? a : -1, .events = POLLIN},
                              {.fd = open_b ? b : -1, .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            int from = i == 0 ? a : b, to = i == 0 ? b : a;
            ssize_t r = recv(from, buf, BUF_SIZE, 0);
            if (r < 0 && errno == EINTR) continue;
            if (r > 0 && _write_all(to, buf, (size_t)r)) continue;
            if (r < 0 || r > 0) { /* an error, or the other side is gone */
                open_a = open_b = false;
                break;
            }
            shutdown(to, SHUT_WR);
            if (i == 0)
                open_a = false;
            else
                open_b = false;
        }
    }
    free(buf);
}

bool app_tunnel_serve(int lfd, const char *url, int64_t refresh_after_ms,
                      app_tunnel_refresh_fn refresh, void *ctx)
{
    struct sigaction sa = {.sa_handler = _on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGCHLD, SIG_IGN); /* connection processes are reaped by the kernel */
    signal(SIGPIPE, SIG_IGN);
    char *cur = ts_strdup(url);
    int64_t got_at = ts_now_mono_ms();
    bool ok = true;
    while (!g_stop) {
        struct pollfd p = {.fd = lfd, .events = POLLIN};
        int pr = poll(&p, 1, 500);
        if (pr <= 0) continue;
        int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (cfd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN) continue;
            fprintf(stderr, "tessera app: accept: %s\n", strerror(errno));
            ok = false;
            break;
        }
        if (refresh && ts_now_mono_ms() - got_at > refresh_after_ms) {
            char *fresh = refresh(ctx);
            if (fresh) {
                free(cur);
                cur = fresh;
                got_at = ts_now_mono_ms();
            }
        }
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            close(lfd);
            int one = 1;
            setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            int up = _open_tunnel(cur, cfd);
            if (up >= 0) {
                setsockopt(up, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                _relay(cfd, up);
                close(up);
            }
            close(cfd);
            _exit(up >= 0 ? 0 : 1);
        }
        if (pid < 0) fprintf(stderr, "tessera app: fork: %s\n", strerror(errno));
        close(cfd);
    }
    free(cur);
    close(lfd);
    return ok;
}
