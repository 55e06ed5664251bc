/* ws_rtt: WebSocket echo round-trip latency for bench-wsproxy.
 *   ws_rtt HOST:PORT PATH N [HEADER...]
 * Opens one WebSocket (extra request headers as given, e.g. a Cookie), sends N
 * masked 32-byte binary frames one at a time, waits for each echo, and prints
 * "p50_us p99_us p999_us mean_us" of the round trips (after 1,000 warm-up). */
#include "bench/wsproxy/wsio.h"
#include "libcommon/wsframe.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: ws_rtt HOST:PORT PATH N [HEADER...]\n");
        return 2;
    }
    char host[64];
    const char *colon = strrchr(argv[1], ':');
    snprintf(host, sizeof(host), "%.*s", (int)(colon - argv[1]), argv[1]);
    int n = atoi(argv[3]), warm = 1000;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    inet_pton(AF_INET, host, &sa.sin_addr);
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
        perror("ws_rtt: connect");
        return 1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    char req[8192];
    int o = snprintf(req, sizeof(req),
                     "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                     "Sec-WebSocket-Version: 13\r\n",
                     argv[2], argv[1]);
    for (int i = 4; i < argc; i++)
        o += snprintf(req + o, sizeof(req) - (size_t)o, "%s\r\n", argv[i]);
    o += snprintf(req + o, sizeof(req) - (size_t)o, "\r\n");
    if (write(fd, req, (size_t)o) != o) return 1;
    char head[4096];
    if (wsio_read_head(fd, head, sizeof(head)) == 0) {
        fprintf(stderr, "ws_rtt: handshake failed\n");
        return 1;
    }
    if (memcmp(head, "HTTP/1.1 101", 12) != 0) {
        fprintf(stderr, "ws_rtt: %.*s\n", (int)(strchr(head, '\r') - head), head);
        return 1;
    }
    double *rtt = calloc((size_t)n, sizeof(double));
    uint8_t frame[64], back[64];
    const uint8_t mask[4] = {0x11, 0x22, 0x33, 0x44};
    for (int i = -warm; i < n; i++) {
        size_t hl = wsf_write_header(frame, true, WSF_BINARY, 32, mask);
        memset(frame + hl, 'a' + (i & 15), 32);
        wsf_mask(frame + hl, 32, mask, 0);
        double t0 = now_us();
        if (write(fd, frame, hl + 32) != (ssize_t)(hl + 32) || !wsio_read_full(fd, back, 2 + 32)) {
            fprintf(stderr, "ws_rtt: connection lost at %d\n", i);
            return 1;
        }
        double t = now_us() - t0;
        if (back[1] != 32 || back[2] != (uint8_t)('a' + (i & 15))) {
            fprintf(stderr, "ws_rtt: bad echo\n");
            return 1;
        }
        if (i >= 0) rtt[i] = t;
    }
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += rtt[i];
    qsort(rtt, (size_t)n, sizeof(double), cmp);
    printf("%.1f %.1f %.1f %.1f\n", rtt[n / 2], rtt[(int)(n * 0.99)],
           rtt[(int)fmin(n - 1, n * 0.999)], sum / n);
    return 0;
}
