/* probe_net.c: the probe's network checks: raw sockets, reachability over
 * TCP, UDP and ICMP, and a listener (see probe_net.h). */
#define _GNU_SOURCE
#include "probe_net.h"

#include "probe_out.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/ethernet.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static int parse_addr(const char *s, struct sockaddr_in *sa, int want_port)
{
    char host[64];
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    const char *colon = strrchr(s, ':');
    size_t hl = want_port ? (colon ? (size_t)(colon - s) : 0) : strlen(s);
    if (hl == 0 || hl >= sizeof(host)) return -1;
    memcpy(host, s, hl);
    host[hl] = 0;
    if (inet_pton(AF_INET, host, &sa->sin_addr) != 1) return -1;
    if (want_port) {
        char *end;
        long p = strtol(colon + 1, &end, 10);
        if (*end || p <= 0 || p > 65535) return -1;
        sa->sin_port = htons((uint16_t)p);
    }
    return 0;
}

/* ---- raw sockets -------------------------------------------------------------- */

static void try_socket(const char *name, int domain, int type, int proto)
{
    int fd = socket(domain, type, proto);
    int e = fd < 0 ? errno : 0;
    probe_out_entry(name, fd >= 0 ? "opened" : "refused", fd, e, "");
    if (fd >= 0) close(fd);
}

int probe_net_rawsock(void)
{
    probe_out_begin();
    try_socket("inet_raw", AF_INET, SOCK_RAW, IPPROTO_ICMP);
    try_socket("inet_raw_tcp", AF_INET, SOCK_RAW, IPPROTO_TCP);
    try_socket("packet", AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
    probe_out_end();
    return 0;
}

/* ---- reachability --------------------------------------------------------------- */

static int opt_timeout(int *argc, char ***argv, int def)
{
    int t = def;
    if (*argc >= 2 && strcmp((*argv)[0], "-t") == 0) {
        t = atoi((*argv)[1]);
        *argc -= 2;
        *argv += 2;
    }
    return t > 0 ? t : def;
}

int probe_net_tcp(int argc, char **argv)
{
    int timeout = opt_timeout(&argc, &argv, 2000);
    struct pollfd *pf = calloc((size_t)argc + 1, sizeof(*pf));
    const char **res = calloc((size_t)argc + 1, sizeof(*res));
    int *errs = calloc((size_t)argc + 1, sizeof(int));
    int pending = 0;
    for (int i = 0; i < argc; i++) {
        struct sockaddr_in sa;
        pf[i].fd = -1;
        if (parse_addr(argv[i], &sa, 1) != 0) {
            res[i] = "error";
            errs[i] = EINVAL;
            continue;
        }
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            res[i] = "error";
            errs[i] = errno;
            continue;
        }
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
            res[i] = "open";
            close(fd);
            continue;
        }
        if (errno != EINPROGRESS) {
            errs[i] = errno;
            res[i] = errno == ECONNREFUSED                             ? "refused"
                     : (errno == EHOSTUNREACH || errno == ENETUNREACH) ? "unreachable"
                                                                       : "error";
            close(fd);
            continue;
        }
        pf[i].fd = fd;
        pf[i].events = POLLOUT;
        pending++;
    }
    long deadline = now_ms() + timeout;
    while (pending > 0) {
        long left = deadline - now_ms();
        if (left <= 0) break;
        int n = poll(pf, (nfds_t)argc, (int)left);
        if (n < 0 && errno != EINTR) break;
        for (int i = 0; i < argc; i++) {
            if (pf[i].fd < 0 || !pf[i].revents) continue;
            int soerr = 0;
            socklen_t l = sizeof(soerr);
            getsockopt(pf[i].fd, SOL_SOCKET, SO_ERROR, &soerr, &l);
            errs[i] = soerr;
            res[i] = soerr == 0                                        ? "open"
                     : soerr == ECONNREFUSED                           ? "refused"
                     : (soerr == EHOSTUNREACH || soerr == ENETUNREACH) ? "unreachable"
                                                                       : "error";
            close(pf[i].fd);
            pf[i].fd = -1;
            pending--;
        }
    }
    probe_out_begin();
    for (int i = 0; i < argc; i++) {
        if (pf[i].fd >= 0) {
            close(pf[i].fd);
            res[i] = "timeout";
        }
        probe_out_entry(argv[i], res[i], 0, errs[i], "");
    }
    probe_out_end();
    return 0;
}

int probe_net_udp(int argc, char **argv)
{
    int timeout = opt_timeout(&argc, &argv, 2000);
    struct pollfd *pf = calloc((size_t)argc + 1, sizeof(*pf));
    const char **res = calloc((size_t)argc + 1, sizeof(*res));
    int *errs = calloc((size_t)argc + 1, sizeof(int));
    int pending = 0;
    for (int i = 0; i < argc; i++) {
        struct sockaddr_in sa;
        pf[i].fd = -1;
        if (parse_addr(argv[i], &sa, 1) != 0) {
            res[i] = "error";
            errs[i] = EINVAL;
            continue;
        }
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
            send(fd, BANNER "-udp", sizeof(BANNER "-udp") - 1, 0) < 0) {
            errs[i] = errno;
            res[i] = errno == ECONNREFUSED ? "refused" : "error";
            if (fd >= 0) close(fd);
            continue;
        }
        pf[i].fd = fd;
        pf[i].events = POLLIN;
        pending++;
    }
    long deadline = now_ms() + timeout;
    while (pending > 0) {
        long left = deadline - now_ms();
        if (left <= 0) break;
        int n = poll(pf, (nfds_t)argc, (int)left);
        if (n < 0 && errno != EINTR) break;
        for (int i = 0; i < argc; i++) {
            if (pf[i].fd < 0 || !pf[i].revents) continue;
            char buf[256];
            ssize_t got = recv(pf[i].fd, buf, sizeof(buf), 0);
            if (got >= 0) {
                res[i] = "reply";
            } else {
                errs[i] = errno;
                res[i] = errno == ECONNREFUSED ? "refused" : "error";
            }
            close(pf[i].fd);
            pf[i].fd = -1;
            pending--;
        }
    }
    probe_out_begin();
    for (int i = 0; i < argc; i++) {
        if (pf[i].fd >= 0) {
            close(pf[i].fd);
            res[i] = "no-reply";
        }
        probe_out_entry(argv[i], res[i], 0, errs[i], "");
    }
    probe_out_end();
    return 0;
}

static uint16_t csum(const void *data, size_t len)
{
    const uint8_t *p = data;
    uint32_t s = 0;
    for (size_t i = 0; i + 1 < len; i += 2)
        s += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (len & 1) s += (uint32_t)(p[len - 1] << 8);
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return htons((uint16_t)~s);
}

int probe_net_ping(int argc, char **argv)
{
    int timeout = opt_timeout(&argc, &argv, 2000);
    int raw = 0;
    const char *kind = "ping-socket";
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_ICMP);
    int e1 = fd < 0 ? errno : 0;
    if (fd < 0) {
        fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
        raw = 1;
        kind = "raw-socket";
    }
    probe_out_begin();
    if (fd < 0) {
        int e2 = errno;
        char d[128];
        snprintf(d, sizeof(d), "ping socket: %s; raw socket: %s", probe_out_errname(e1),
                 probe_out_errname(e2));
        for (int i = 0; i < argc; i++)
            probe_out_entry(argv[i], "no-socket", -1, e2, d);
        probe_out_end();
        return 0;
    }
    int *got = calloc((size_t)argc + 1, sizeof(int));
    uint16_t ident = (uint16_t)(getpid() & 0xffff);
    for (int i = 0; i < argc; i++) {
        struct sockaddr_in sa;
        if (parse_addr(argv[i], &sa, 0) != 0) {
            got[i] = -1;
            continue;
        }
        uint8_t pkt[64];
        memset(pkt, 0, sizeof(pkt));
        struct icmphdr *h = (struct icmphdr *)pkt;
        h->type = ICMP_ECHO;
        h->un.echo.id = htons(ident);
        h->un.echo.sequence = htons((uint16_t)(i + 1));
        memcpy(pkt + sizeof(*h), BANNER, sizeof(BANNER) - 1);
        h->checksum = csum(pkt, sizeof(pkt));
        if (sendto(fd, pkt, sizeof(pkt), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
            got[i] = -errno - 1000;
    }
    long deadline = now_ms() + timeout;
    for (;;) {
        long left = deadline - now_ms();
        if (left <= 0) break;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)left) <= 0) continue;
        uint8_t buf[1500];
        struct sockaddr_in from;
        socklen_t fl = sizeof(from);
        ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
        if (n <= 0) continue;
        uint8_t *icmp = buf;
        if (raw) {
            size_t ihl = (size_t)(buf[0] & 0x0f) * 4;
            if ((size_t)n < ihl + sizeof(struct icmphdr)) continue;
            icmp = buf + ihl;
        }
        struct icmphdr *h = (struct icmphdr *)icmp;
        if (h->type != ICMP_ECHOREPLY) continue;
        if (raw && ntohs(h->un.echo.id) != ident) continue;
        int seq = ntohs(h->un.echo.sequence);
        if (seq >= 1 && seq <= argc) {
            struct sockaddr_in sa;
            if (parse_addr(argv[seq - 1], &sa, 0) == 0 &&
                sa.sin_addr.s_addr == from.sin_addr.s_addr)
                got[seq - 1] = 1;
        }
    }
    for (int i = 0; i < argc; i++) {
        if (got[i] <= -1000)
            probe_out_entry(argv[i], "error", -1, -got[i] - 1000, kind);
        else
            probe_out_entry(argv[i],
                            got[i] == 1  ? "reply"
                            : got[i] < 0 ? "error"
                                         : "no-reply",
                            0, 0, kind);
    }
    probe_out_end();
    close(fd);
    return 0;
}

/* ---- serve ------------------------------------------------------------------------ */

int probe_net_serve(int argc, char **argv)
{
    if (argc != 2 && argc != 3) return 2;
    int tport = atoi(argv[0]), uport = atoi(argv[1]);
    int lifetime = argc == 3 ? atoi(argv[2]) : 0;
    int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(t, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    sa.sin_port = htons((uint16_t)tport);
    if (t < 0 || bind(t, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(t, 64) != 0) {
        printf("{\"error\":\"tcp %d: %s\"}\n", tport, strerror(errno));
        return 1;
    }
    sa.sin_port = htons((uint16_t)uport);
    if (u < 0 || bind(u, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        printf("{\"error\":\"udp %d: %s\"}\n", uport, strerror(errno));
        return 1;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid > 0) {
        printf("{\"pid\":%d,\"tcp\":%d,\"udp\":%d}\n", (int)pid, tport, uport);
        return 0;
    }
    setsid();
    if (lifetime > 0) alarm((unsigned)lifetime);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    int dn = open("/dev/null", O_RDWR);
    if (dn >= 0) {
        dup2(dn, 0);
        dup2(dn, 1);
        dup2(dn, 2);
        if (dn > 2) close(dn);
    }
    struct pollfd p[2] = {{.fd = t, .events = POLLIN}, {.fd = u, .events = POLLIN}};
    for (;;) {
        if (poll(p, 2, -1) < 0) continue;
        if (p[0].revents) {
            int c = accept4(t, NULL, NULL, SOCK_CLOEXEC);
            if (c >= 0) {
                ssize_t w = write(c, BANNER "\n", sizeof(BANNER));
                (void)w;
                close(c);
            }
        }
        if (p[1].revents) {
            char buf[512], out[600];
            struct sockaddr_in from;
            socklen_t fl = sizeof(from);
            ssize_t n = recvfrom(u, buf, sizeof(buf) - 1, 0, (struct sockaddr *)&from, &fl);
            if (n >= 0) {
                buf[n] = 0;
                int m = snprintf(out, sizeof(out), BANNER " %s", buf);
                sendto(u, out, (size_t)m, 0, (struct sockaddr *)&from, fl);
            }
        }
    }
}
