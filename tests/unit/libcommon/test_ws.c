/* test_ws.c: libcommon/ws.c (WebSocket connections: reassembly, masking
 * rules, control frames, close codes, size limit, handshakes) and the HTTP
 * server's upgraded connections (http_reply_upgrade): a real server on a
 * loopback port whose route upgrades and echoes, reached with
 * ws_client_open. */
#include "libcommon/http.h"
#include "libcommon/log.h"
#include "libcommon/ws.h"

#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

/* A raw frame as a client sends it (masked) or a server (mask NULL). */
static void raw_frame(int fd, bool fin, int op, const void *p, size_t n, const uint8_t *mask)
{
    uint8_t h[WSF_MAX_HEADER];
    size_t hl = wsf_write_header(h, fin, op, n, mask);
    uint8_t *b = malloc(hl + n + 1);
    memcpy(b, h, hl);
    memcpy(b + hl, p, n);
    if (mask) wsf_mask(b + hl, n, mask, 0);
    assert_int_equal(write(fd, b, hl + n), (ssize_t)(hl + n));
    free(b);
}

static ws_next next_filled(ws_conn *c, int *op, const uint8_t **d, size_t *n, int *code)
{
    for (int i = 0; i < 50; i++) {
        ws_next r = ws_conn_next(c, op, d, n, code);
        if (r != WS_NEXT_NONE) return r;
        if (!ws_conn_fill(c)) return ws_conn_next(c, op, d, n, code);
    }
    return WS_NEXT_NONE;
}

static const uint8_t MASK[4] = {1, 2, 3, 4};

static void test_reassembly_and_control(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ws_conn *c = ws_conn_new(sv[0], WS_SERVER, NULL, 0, 64);
    /* fragments with a ping between them: the ping is answered, the message whole */
    raw_frame(sv[1], false, WSF_TEXT, "hel", 3, MASK);
    raw_frame(sv[1], true, WSF_PING, "p", 1, MASK);
    raw_frame(sv[1], false, WSF_CONT, "lo ", 3, MASK);
    raw_frame(sv[1], true, WSF_CONT, "world", 5, MASK);
    int op = 0, code = 0;
    const uint8_t *d;
    size_t n;
    assert_int_equal(next_filled(c, &op, &d, &n, &code), WS_NEXT_MESSAGE);
    assert_int_equal(op, WSF_TEXT);
    assert_int_equal(n, 11);
    assert_string_equal((const char *)d, "hello world");
    uint8_t pong[8];
    assert_int_equal(read(sv[1], pong, sizeof(pong)), 3);
    assert_int_equal(pong[0], 0x80 | WSF_PONG); /* unmasked: from a server */
    assert_int_equal(pong[1], 1);
    assert_int_equal(pong[2], 'p');
    /* a close with its code */
    uint8_t cp[125];
    size_t cl = wsf_close_payload(cp, WSF_CLOSE_GOING_AWAY, "bye");
    raw_frame(sv[1], true, WSF_CLOSE, cp, cl, MASK);
    assert_int_equal(next_filled(c, &op, &d, &n, &code), WS_NEXT_CLOSE);
    assert_int_equal(code, 1001);
    /* our close goes out once */
    ws_conn_close(c, WSF_CLOSE_NORMAL, "done");
    ws_conn_close(c, WSF_CLOSE_INTERNAL, "again");
    assert_true(ws_conn_close_sent(c));
    uint8_t cf[32];
    assert_int_equal(read(sv[1], cf, sizeof(cf)), 8);
    assert_int_equal(cf[0], 0x88);
    assert_int_equal(wsf_close_code(cf + 2, 6), 1000);
    assert_false(ws_conn_send(c, WSF_TEXT, "x", 1)); /* nothing after a close */
    ws_conn_free(c);
    close(sv[1]);
}

static void test_errors(void **state)
{
    (void)state;
    int op = 0, code = 0;
    const uint8_t *d;
    size_t n;
    struct {
        bool fin;
        int op;
        const char *payload;
        bool masked;
        int want;
    } cases[] = {
        {true, WSF_TEXT, "unmasked from a client", false, WSF_CLOSE_PROTOCOL},
        {true, WSF_CONT, "a continuation without a start", true, WSF_CLOSE_PROTOCOL},
        {true, WSF_BINARY, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef+",
         true, WSF_CLOSE_TOO_BIG},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        ws_conn *c = ws_conn_new(sv[0], WS_SERVER, NULL, 0, 64);
        raw_frame(sv[1], cases[i].fin, cases[i].op, cases[i].payload, strlen(cases[i].payload),
                  cases[i].masked ? MASK : NULL);
        assert_int_equal(next_filled(c, &op, &d, &n, &code), WS_NEXT_ERROR);
        assert_int_equal(code, cases[i].want);
        ws_conn_free(c);
        close(sv[1]);
    }
    /* fragments that together pass the limit */
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ws_conn *c = ws_conn_new(sv[0], WS_SERVER, NULL, 0, 8);
    raw_frame(sv[1], false, WSF_BINARY, "12345", 5, MASK);
    raw_frame(sv[1], true, WSF_CONT, "67890", 5, MASK);
    assert_int_equal(next_filled(c, &op, &d, &n, &code), WS_NEXT_ERROR);
    assert_int_equal(code, WSF_CLOSE_TOO_BIG);
    ws_conn_free(c);
    close(sv[1]);
    /* a client side refuses masked frames and masks its own */
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    c = ws_conn_new(sv[0], WS_CLIENT, NULL, 0, 64);
    assert_true(ws_conn_send(c, WSF_BINARY, "abc", 3));
    uint8_t b[16];
    assert_int_equal(read(sv[1], b, sizeof(b)), 9);
    wsf_frame f;
    assert_int_equal(wsf_parse_header(b, 9, &f), WSF_HEADER);
    assert_true(f.masked);
    wsf_mask(b + f.header_len, 3, f.mask, 0);
    assert_memory_equal(b + f.header_len, "abc", 3);
    raw_frame(sv[1], true, WSF_TEXT, "m", 1, MASK);
    assert_int_equal(next_filled(c, &op, &d, &n, &code), WS_NEXT_ERROR);
    assert_int_equal(code, WSF_CLOSE_PROTOCOL);
    ws_conn_free(c);
    close(sv[1]);
    /* close codes no endpoint may send */
    const uint8_t c1005[] = {0x03, 0xed}, c999[] = {0x03, 0xe7}, c3000[] = {0x0b, 0xb8};
    assert_int_equal(wsf_close_code(c1005, 2), -1);
    assert_int_equal(wsf_close_code(c999, 2), -1);
    assert_int_equal(wsf_close_code(c1005, 1), -1);
    assert_int_equal(wsf_close_code(c3000, 2), 3000);
    assert_int_equal(wsf_close_code(NULL, 0), WSF_CLOSE_NO_STATUS);
}

static void test_handshake_check(void **state)
{
    (void)state;
    char acc[WSF_ACCEPT_LEN + 1];
    const char *why = NULL;
    const char *key = "dGhlIHNhbXBsZSBub25jZQ==";
    assert_true(
        ws_handshake_check("GET", "websocket", "keep-alive, Upgrade", "13", key, acc, &why));
    assert_string_equal(acc, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="); /* RFC 6455 1.3 */
    assert_false(ws_handshake_check("POST", "websocket", "Upgrade", "13", key, acc, &why));
    assert_non_null(strstr(why, "GET"));
    assert_false(ws_handshake_check("GET", NULL, "Upgrade", "13", key, acc, &why));
    assert_non_null(strstr(why, "Upgrade"));
    assert_false(ws_handshake_check("GET", "websocket", "keep-alive", "13", key, acc, &why));
    assert_non_null(strstr(why, "Connection"));
    assert_false(ws_handshake_check("GET", "websocket", "Upgrade", "8", key, acc, &why));
    assert_non_null(strstr(why, "13"));
    assert_false(ws_handshake_check("GET", "websocket", "Upgrade", "13", "short==", acc, &why));
    assert_non_null(strstr(why, "Key"));
    assert_false(ws_handshake_check("GET", "websocket", "Upgrade", "13", NULL, acc, &why));
}

/* ---- a server whose route upgrades ----------------------------------------------------- */

static atomic_int g_released, g_streams_done;

typedef struct echo {
    int fd;
    char *extra;
    size_t extra_len;
    http_upgraded *h;
} echo;

static void *echo_thread(void *arg)
{
    echo *e = arg;
    ws_conn *c = ws_conn_new(e->fd, WS_SERVER, e->extra, e->extra_len, 1024);
    for (bool done = false; !done;) {
        int op = 0, code = 0;
        const uint8_t *d;
        size_t n;
        ws_next r = ws_conn_next(c, &op, &d, &n, &code);
        if (r == WS_NEXT_NONE) {
            struct pollfd pf = {.fd = e->fd, .events = POLLIN};
            if (poll(&pf, 1, 5000) != 1 || !ws_conn_fill(c)) break;
            continue;
        }
        if (r == WS_NEXT_MESSAGE) {
            if (!ws_conn_send(c, op, d, n)) done = true;
        } else {
            ws_conn_close(c, r == WS_NEXT_CLOSE ? WSF_CLOSE_NORMAL : code, NULL);
            done = true;
        }
    }
    ws_conn_linger(c, 2000);
    ws_conn_forget_fd(c); /* the server's handle closes it */
    ws_conn_free(c);
    http_upgraded_close(e->h);
    free(e->extra);
    free(e);
    atomic_fetch_add(&g_streams_done, 1);
    return NULL;
}

static void on_up(int fd, const char *extra, size_t extra_len, void *cls, http_upgraded *h)
{
    (void)cls;
    echo *e = calloc(1, sizeof(*e));
    e->fd = fd;
    e->extra = malloc(extra_len + 1);
    memcpy(e->extra, extra, extra_len);
    e->extra_len = extra_len;
    e->h = h;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, echo_thread, e), 0);
    pthread_detach(t);
}

static void on_release(void *cls)
{
    (void)cls;
    atomic_fetch_add(&g_released, 1);
}

static void h_ws(http_req *req, http_resp *resp, void *ctx)
{
    (void)ctx;
    char acc[WSF_ACCEPT_LEN + 1];
    const char *why = NULL;
    if (!ws_handshake_check(req->method, http_header(req, "Upgrade"),
                            http_header(req, "Connection"),
                            http_header(req, "Sec-WebSocket-Version"),
                            http_header(req, "Sec-WebSocket-Key"), acc, &why)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "%s", why);
        return;
    }
    http_set_header(resp, "Upgrade", "websocket");
    http_set_header(resp, "Sec-WebSocket-Accept", acc);
    http_reply_upgrade(req, resp, on_up, on_release, NULL);
}

static void test_upgrade_echo(void **state)
{
    (void)state;
    http_router *r = http_router_new();
    http_route(r, "GET", "/ws", h_ws, NULL);
    http_server_opts o = {
        .listen = "127.0.0.1:0", .threads = 2, .conn_timeout_s = 5, .service = "test"};
    ts_err err = {{0}};
    http_server *s = http_server_start(&o, r, &err);
    assert_non_null(s);
    int port = http_server_port(s);
    for (int round = 0; round < 3; round++) {
        ws_conn *c = ws_client_open("127.0.0.1", port, "/ws?x=1", 3000, 1024, &err);
        assert_non_null(c);
        char msg[32];
        snprintf(msg, sizeof(msg), "hello %d", round);
        assert_true(ws_conn_send(c, WSF_TEXT, msg, strlen(msg)));
        int op = 0, code = 0;
        const uint8_t *d;
        size_t n;
        assert_int_equal(next_filled(c, &op, &d, &n, &code), WS_NEXT_MESSAGE);
        assert_int_equal(op, WSF_TEXT);
        assert_string_equal((const char *)d, msg);
        /* an open stream is not a request in flight (the drain does not wait for it) */
        assert_int_equal(http_server_inflight(s), 0);
        ws_conn_close(c, WSF_CLOSE_NORMAL, NULL);
        assert_int_equal(next_filled(c, &op, &d, &n, &code), WS_NEXT_CLOSE);
        assert_int_equal(code, WSF_CLOSE_NORMAL);
        ws_conn_free(c);
    }
    /* a message over the limit while the client still writes: the client
     * reads the close frame (1009), not a reset (the server lingers) */
    {
        ws_conn *c = ws_client_open("127.0.0.1", port, "/ws", 3000, 1024, &err);
        assert_non_null(c);
        size_t big = 4 << 20;
        char *junk = calloc(1, big);
        if (!ws_conn_send(c, WSF_BINARY, junk, big)) { /* the server may have read enough */
        }
        free(junk);
        int op = 0, code = 0;
        const uint8_t *d;
        size_t n;
        assert_int_equal(next_filled(c, &op, &d, &n, &code), WS_NEXT_CLOSE);
        assert_int_equal(code, WSF_CLOSE_TOO_BIG);
        ws_conn_free(c);
    }
    /* a plain GET: 400 from the handler's checks, and the client sees that status */
    ws_conn *c = ws_client_open("127.0.0.1", port, "/nope", 3000, 1024, &err);
    assert_null(c);
    assert_non_null(strstr(err.msg, "404"));
    for (int i = 0; i < 300 && atomic_load(&g_streams_done) < 4; i++)
        usleep(10000);
    assert_int_equal(atomic_load(&g_streams_done), 4);
    assert_int_equal(atomic_load(&g_released), 0);
    http_server_stop(s);
    http_router_free(r);
    /* a local request: nothing upgrades it, release runs */
    http_req *lr = http_req_new_local("GET", "/ws", NULL, NULL, 0);
    http_resp *resp = http_resp_new();
    http_reply_upgrade(lr, resp, on_up, on_release, NULL);
    assert_int_equal(http_resp_status(resp), 101);
    http_req_free_local(lr);
    http_resp_free(resp);
    assert_int_equal(atomic_load(&g_released), 1);
}

int main(void)
{
    tlog_init("test", NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reassembly_and_control),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_handshake_check),
        cmocka_unit_test(test_upgrade_echo),
    };
    return cmocka_run_group_tests_name("libcommon_ws", tests, NULL, NULL);
}
