/* ws_echo: a WebSocket echo server for bench-wsproxy: one thread per
 * connection, blocking I/O, handshake parsed with the proxy's http1.c.
 *   ws_echo PORT */
#include "bench/wsproxy/wsio.h"
#include "libcommon/http1.h"
#include "libcommon/wsframe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void *serve(void *arg)
{
    int fd = (int)(intptr_t)arg;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    char head[8192];
    size_t end = wsio_read_head(fd, head, sizeof(head));
    h1_msg m;
    const h1_header *k;
    if (!end || !h1_parse_request(head, end, &m) || !(k = h1_find(&m, "sec-websocket-key")))
        goto out;
    char acc[WSF_ACCEPT_LEN + 1], resp[256];
    wsf_accept(k->value, k->value_len, acc);
    int rl = snprintf(resp, sizeof(resp),
                      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                      "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
                      acc);
    if (!wsio_write_full(fd, resp, (size_t)rl)) goto out;
    static __thread uint8_t buf[1 << 20];
    for (;;) {
        uint8_t h[WSF_MAX_HEADER];
        size_t hl = 2;
        wsf_frame f;
        if (!wsio_read_full(fd, h, 2)) break;
        wsf_parse_result r;
        while ((r = wsf_parse_header(h, hl, &f)) == WSF_NEED_MORE) {
            if (!wsio_read_full(fd, h + hl, 1)) goto out;
            hl++;
        }
        if (r == WSF_BAD_FRAME || f.len > sizeof(buf) - WSF_MAX_HEADER) break;
        uint8_t *pl = buf + WSF_MAX_HEADER;
        if (!wsio_read_full(fd, pl, (size_t)f.len)) break;
        if (f.masked) wsf_mask(pl, (size_t)f.len, f.mask, 0);
        int op = f.opcode == WSF_PING ? WSF_PONG : f.opcode;
        uint8_t oh[WSF_MAX_HEADER];
        size_t ohl = wsf_write_header(oh, true, op, f.len, NULL);
        memcpy(pl - ohl, oh, ohl);
        if (!wsio_write_full(fd, pl - ohl, ohl + (size_t)f.len)) break;
        if (f.opcode == WSF_CLOSE) break;
    }
out:
    close(fd);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: ws_echo PORT\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 128)) {
        perror("ws_echo: bind");
        return 1;
    }
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) continue;
        pthread_t t;
        pthread_create(&t, NULL, serve, (void *)(intptr_t)fd);
        pthread_detach(t);
    }
}
