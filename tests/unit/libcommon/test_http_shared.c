/* test_http_shared.c: two servers on one shared address (http_server_share,
 * net_listen_open_shared: SO_REUSEPORT), as two instances of a service are
 * on the development stack: the kernel gives connections to both; one that
 * quiesces (a drain) or stops leaves the address to the other, and every
 * connection made after it is answered; a plain listener cannot take the
 * address, nor a shared one port 0. */
#include "libcommon/http.h"
#include "libcommon/log.h"
#include "libcommon/net_listen.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

static void h_who(http_req *req, http_resp *resp, void *ctx)
{
    (void)req;
    http_reply(resp, 200, "text/plain", ctx, strlen(ctx));
}

static http_server *start(http_router *r, ts_err *err)
{
    http_server_opts o = {.listen = "127.0.0.1:0", .threads = 2, .service = "test"};
    return http_server_start(&o, r, err);
}

/* A free port (bound and released). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sa);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
        fail_msg("no free port");
    close(fd);
    return ntohs(sa.sin_port);
}

/* GET /who on a new connection: 'a' or 'b' (the answering server), 0 when
 * the connection was refused or cut. */
static char who(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char buf[1024] = "";
    size_t got = 0;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
        const char req[] = "GET /who HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        if (write(fd, req, sizeof(req) - 1) == (ssize_t)(sizeof(req) - 1)) {
            ssize_t n;
            while (got < sizeof(buf) - 1 && (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
                got += (size_t)n;
        }
    }
    close(fd);
    buf[got] = '\0';
    const char *body = strstr(buf, "\r\n\r\n");
    return strncmp(buf, "HTTP/1.1 200", 12) == 0 && body ? body[4] : 0;
}

static void test_two_servers_share_an_address(void **state)
{
    (void)state;
    tlog_init("test", NULL);
    http_router *ra = http_router_new(), *rb = http_router_new();
    http_route(ra, "GET", "/who", h_who, "a");
    http_route(rb, "GET", "/who", h_who, "b");
    ts_err err = {{0}};
    http_server *a = start(ra, &err), *b = start(rb, &err);
    assert_non_null(a);
    assert_non_null(b);
    int port = free_port();
    char addr[32];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    assert_true(http_server_share(a, addr, &err));
    assert_true(http_server_share(b, addr, &err));

    /* the kernel spreads connections over both */
    int n_a = 0, n_b = 0;
    for (int i = 0; i < 64; i++) {
        char w = who(port);
        n_a += w == 'a';
        n_b += w == 'b';
    }
    assert_int_equal(n_a + n_b, 64);
    assert_true(n_a > 0 && n_b > 0);
    /* each still answers on its own address */
    assert_int_equal(who(http_server_port(a)), 'a');

    /* nobody else takes the address: a plain listener, nor port 0 shared */
    assert_int_equal(net_listen_open(addr, &err), -1);
    assert_non_null(strstr(err.msg, "in use"));
    assert_int_equal(net_listen_open_shared("127.0.0.1:0", &err), -1);
    assert_non_null(strstr(err.msg, "needs its port"));

    /* a drains: every connection from now on is b's */
    http_server_quiesce(a);
    for (int i = 0; i < 32; i++)
        assert_int_equal(who(port), 'b');
    http_server_stop(a);
    for (int i = 0; i < 8; i++)
        assert_int_equal(who(port), 'b');
    http_server_stop(b);
    http_router_free(ra);
    http_router_free(rb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_servers_share_an_address),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
