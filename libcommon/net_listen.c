/* net_listen.c: see net_listen.h. */
#include "libcommon/net_listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* "host:port", ":port", "[v6]:port" -> host ("" for any) and port text. */
bool net_listen_parse(const char *addr, char *host, size_t hsize, char *port, size_t psize,
                      ts_err *err)
{
    if (!addr || !*addr) {
        ts_err_set(err, "empty listen address (want host:port or :port)");
        return false;
    }
    const char *colon;
    if (addr[0] == '[') {
        const char *close = strchr(addr, ']');
        if (!close || close[1] != ':') {
            ts_err_set(err, "bad listen address \"%s\" (want [v6addr]:port)", addr);
            return false;
        }
        if ((size_t)(close - addr - 1) >= hsize) goto too_long;
        memcpy(host, addr + 1, (size_t)(close - addr - 1));
        host[close - addr - 1] = '\0';
        colon = close + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon) {
            ts_err_set(err, "bad listen address \"%s\" (want host:port or :port)", addr);
            return false;
        }
        if ((size_t)(colon - addr) >= hsize) goto too_long;
        memcpy(host, addr, (size_t)(colon - addr));
        host[colon - addr] = '\0';
    }
    const char *p = colon + 1;
    size_t plen = strlen(p);
    if (plen == 0 || plen >= psize || strspn(p, "0123456789") != plen || atol(p) > 65535) {
        ts_err_set(err, "bad port in listen address \"%s\" (want 0..65535)", addr);
        return false;
    }
    memcpy(port, p, plen + 1);
    return true;
too_long:
    ts_err_set(err, "listen address \"%s\" has too long a host", addr);
    return false;
}

static int open_listener(const char *addr, bool shared, ts_err *err)
{
    char host[256], port[8];
    if (!net_listen_parse(addr, host, sizeof(host), port, sizeof(port), err)) return -1;
    if (shared && atol(port) == 0) {
        ts_err_set(err, "listen %s: a shared address needs its port (0 would pick one of its own)",
                   addr);
        return -1;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host[0] ? host : "0.0.0.0", port, &hints, &res);
    if (rc != 0) {
        ts_err_set(err, "listen %s: cannot resolve host \"%s\": %s", addr, host, gai_strerror(rc));
        return -1;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        ts_err_set(err, "listen %s: socket: %s", addr, strerror(errno));
        freeaddrinfo(res);
        return -1;
    }
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (shared && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
        ts_err_set(err, "listen %s: SO_REUSEPORT: %s", addr, strerror(errno));
        close(fd);
        freeaddrinfo(res);
        return -1;
    }
    if (bind(fd, res->ai_addr, res->ai_addrlen) != 0) {
        int e = errno;
        ts_err_set(err, "listen %s: %s", addr,
                   e == EADDRINUSE && shared
                       ? "address in use by a socket that does not share it (SO_REUSEPORT), or "
                         "by another user's"
                   : e == EADDRINUSE    ? "address already in use (is another server running?)"
                   : e == EADDRNOTAVAIL ? "address not available on this host"
                                        : strerror(e));
        close(fd);
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    if (listen(fd, 1024) != 0) {
        ts_err_set(err, "listen %s: %s", addr, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

int net_listen_open(const char *addr, ts_err *err)
{
    return open_listener(addr, false, err);
}

int net_listen_open_shared(const char *addr, ts_err *err)
{
    return open_listener(addr, true, err);
}

int net_bound_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0) return 0;
    if (ss.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return 0;
}
