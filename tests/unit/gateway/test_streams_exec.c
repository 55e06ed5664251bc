/* Unit tests: the execute stream's translation (streams_exec.h): the first
 * message (modes, build, refusals), the console (kinds kept apart, UTF-8 cut
 * between chunks, invalid bytes), and a whole stream against a fake
 * tessera-term /exec on a loopback port (the frames it gets, the results the
 * client gets: continued, waiting-input, input lines, build-finished,
 * finished). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "libcommon/http1.h"
#include "libcommon/log.h"
#include "services/gateway/streams_exec.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void test_plan(void **state)
{
    (void)state;
    exec_plan p;
    char why[256];
    const char *q = "{\"mode\":\"query\",\"code\":\"print(1)\"}";
    assert_true(exec_plan_parse(q, strlen(q), &p, why, sizeof(why)));
    assert_int_equal(p.n, 1);
    assert_int_equal(p.kind[0], 'q');
    assert_string_equal(p.code[0], "print(1)");
    exec_plan_free(&p);
    const char *b = "{\"mode\":\"batch\",\"code\":\"\",\"options\":{\"build\":\"make\",\"exec\":"
                    "\"./a.out\"}}";
    assert_true(exec_plan_parse(b, strlen(b), &p, why, sizeof(why)));
    assert_int_equal(p.n, 2);
    assert_true(p.build);
    assert_int_equal(p.kind[0], 'b');
    assert_string_equal(p.code[0], "make");
    assert_string_equal(p.code[1], "./a.out");
    exec_plan_free(&p);
    const char *bad[] = {
        "not json",
        "[1]",
        "{\"mode\":\"nope\",\"code\":\"x\"}",
        "{\"mode\":\"query\"}",
        "{\"mode\":\"query\",\"code\":7}",
        "{\"mode\":\"batch\",\"code\":\"\",\"options\":{}}",
        "{\"mode\":\"batch\",\"code\":\"x\",\"options\":\"exec\"}",
        "{\"code\":\"x\"}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why[0] = '\0';
        assert_false(exec_plan_parse(bad[i], strlen(bad[i]), &p, why, sizeof(why)));
        assert_non_null(strstr(why, "Invalid API parameters"));
        assert_int_equal(p.n, 0);
    }
}

static void test_console(void **state)
{
    (void)state;
    exec_console c = {0};
    assert_true(exec_console_empty(&c));
    exec_console_add(&c, false, (const uint8_t *)"a", 1);
    exec_console_add(&c, false, (const uint8_t *)"b\xc3", 2); /* "é" cut in two */
    exec_console_add(&c, true, (const uint8_t *)"E", 1);
    exec_console_add(&c, false, (const uint8_t *)"\xa9!", 2);
    exec_console_add(&c, false, (const uint8_t *)"\xff", 1); /* never valid */
    json_t *l = exec_console_take(&c, false);
    char *s = json_dumps(l, JSON_COMPACT | JSON_ENSURE_ASCII);
    assert_string_equal(
        s, "[[\"stdout\",\"ab\"],[\"stderr\",\"E\"],[\"stdout\",\"\\u00E9!\\uFFFD\"]]");
    free(s);
    json_decref(l);
    assert_true(exec_console_empty(&c));
    /* an incomplete tail goes out at the end */
    exec_console_add(&c, false, (const uint8_t *)"x\xe2\x82", 3);
    l = exec_console_take(&c, true);
    s = json_dumps(l, JSON_COMPACT | JSON_ENSURE_ASCII);
    assert_string_equal(s, "[[\"stdout\",\"x\\uFFFD\\uFFFD\"]]");
    free(s);
    json_decref(l);
    exec_console_free(&c);
}

/* ---- a whole stream against a fake term ------------------------------------------------ */

typedef struct fake_term {
    int lfd, port;
    char got[8][256]; /* the frames it received, per connection: "q...", "i..." */
    int n_got;
    int conns;
} fake_term;

static bool read_frame(ws_conn *c, char *out, size_t max)
{
    for (;;) {
        int op = 0, code = 0;
        const uint8_t *d;
        size_t n;
        ws_next r = ws_conn_next(c, &op, &d, &n, &code);
        if (r == WS_NEXT_MESSAGE) {
            snprintf(out, max, "%.*s", (int)n, (const char *)d);
            return true;
        }
        if (r != WS_NEXT_NONE) return false;
        struct pollfd pf = {.fd = ws_conn_fd(c), .events = POLLIN};
        if (poll(&pf, 1, 5000) != 1 || !ws_conn_fill(c)) return false;
    }
}

static void fsend(ws_conn *c, const char *s)
{
    assert_true(ws_conn_send(c, WSF_BINARY, s, strlen(s)));
}

/* Serves two connections: a build ("b make": prints, exits 0), then the exec
 * ("b run": asks for input, echoes it, exits 7). */
static void *fake_term_thread(void *arg)
{
    fake_term *t = arg;
    for (int k = 0; k < 2; k++) {
        int fd = accept(t->lfd, NULL, NULL);
        if (fd < 0) return NULL;
        char head[4096];
        size_t have = 0, end = 0;
        while (!end) {
            ssize_t n = read(fd, head + have, sizeof(head) - have);
            if (n <= 0) return NULL;
            have += (size_t)n;
            end = h1_head_end(head, have, 0);
        }
        h1_msg m;
        if (!h1_parse_request(head, end, &m)) return NULL;
        const h1_header *key = h1_find(&m, "sec-websocket-key");
        char acc[WSF_ACCEPT_LEN + 1];
        wsf_accept(key->value, key->value_len, acc);
        char r[256];
        int rl = snprintf(r, sizeof(r),
                          "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                          "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
                          acc);
        if (write(fd, r, (size_t)rl) != rl) return NULL;
        ws_conn *c = ws_conn_new(fd, WS_SERVER, head + end, have - end, 1 << 20);
        t->conns++;
        if (!read_frame(c, t->got[t->n_got++], sizeof(t->got[0]))) return NULL;
        if (k == 0) {
            fsend(c, "obuilding\n");
            fsend(c, "x0");
        } else {
            fsend(c, "ohello ");
            fsend(c, "eoops\n");
            fsend(c, "w");
            if (!read_frame(c, t->got[t->n_got++], sizeof(t->got[0]))) return NULL;
            char line[256];
            snprintf(line, sizeof(line), "ogot %s", t->got[t->n_got - 1] + 1);
            fsend(c, line);
            fsend(c, "x7");
        }
        ws_conn_close(c, WSF_CLOSE_NORMAL, NULL);
        ws_conn_free(c);
    }
    return NULL;
}

typedef struct client_side {
    ws_conn *server_end; /* what streams_exec_serve gets */
    ws_conn *client;     /* the test's end */
} client_side;

static json_t *next_json(ws_conn *c)
{
    char buf[4096];
    if (!read_frame(c, buf, sizeof(buf))) return NULL;
    return json_loads(buf, 0, NULL);
}

/* Results until one that is not "continued" (returned; j, the previous one,
 * is released): their console appended to out ("stdout:text" with kinds). */
static json_t *until_not_continued(ws_conn *client, json_t *j, ts_buf *out, bool kinds)
{
    for (;;) {
        json_decref(j);
        j = next_json(client);
        assert_non_null(j);
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(j, "console"), i, e)
        {
            if (kinds) {
                ts_buf_append_str(out, json_string_value(json_array_get(e, 0)));
                ts_buf_append_str(out, ":");
            }
            ts_buf_append_str(out, json_string_value(json_array_get(e, 1)));
        }
        if (strcmp(json_string_value(json_object_get(j, "status")), "continued") != 0) return j;
    }
}

typedef struct serve_args {
    ws_conn *conn;
    int port;
    exec_ctl *ctl;
} serve_args;

static void *serve_thread(void *arg)
{
    serve_args *a = arg;
    streams_exec_serve(a->conn, "127.0.0.1", a->port, a->ctl);
    return NULL;
}

static void test_stream_against_a_fake_term(void **state)
{
    (void)state;
    fake_term t = {0};
    t.lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(t.lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(t.lfd, 4), 0);
    socklen_t sl = sizeof(sa);
    getsockname(t.lfd, (struct sockaddr *)&sa, &sl);
    t.port = ntohs(sa.sin_port);
    pthread_t tt, st;
    assert_int_equal(pthread_create(&tt, NULL, fake_term_thread, &t), 0);

    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ws_conn *server_end = ws_conn_new(sv[0], WS_SERVER, NULL, 0, 1 << 20);
    ws_conn *client = ws_conn_new(sv[1], WS_CLIENT, NULL, 0, 1 << 20);
    exec_ctl ctl;
    exec_ctl_init(&ctl);
    serve_args a = {.conn = server_end, .port = t.port, .ctl = &ctl};
    assert_int_equal(pthread_create(&st, NULL, serve_thread, &a), 0);

    const char *first = "{\"mode\":\"batch\",\"code\":\"\",\"options\":{\"build\":\"make\","
                        "\"exec\":\"run\"}}";
    assert_true(ws_conn_send(client, WSF_TEXT, first, strlen(first)));
    /* the build's output, then build-finished */
    ts_buf console = {0};
    const char *status = NULL;
    json_t *j = NULL;
    j = until_not_continued(client, j, &console, true);
    status = json_string_value(json_object_get(j, "status"));
    assert_string_equal(status, "build-finished");
    assert_string_equal(console.data, "stdout:building\n");
    assert_true(json_is_null(json_object_get(j, "exitCode")));
    ts_buf_free(&console);
    /* the exec asks for input: waiting-input with the output so far */
    j = until_not_continued(client, j, &console, true);
    status = json_string_value(json_object_get(j, "status"));
    assert_string_equal(status, "waiting-input");
    assert_string_equal(console.data, "stdout:hello stderr:oops\n");
    ts_buf_free(&console);
    assert_true(ws_conn_send(client, WSF_TEXT, "abc", 3));
    j = until_not_continued(client, j, &console, false);
    status = json_string_value(json_object_get(j, "status"));
    assert_string_equal(status, "finished");
    assert_int_equal(json_integer_value(json_object_get(j, "exitCode")), 7);
    assert_string_equal(console.data, "got abc\n");
    assert_true(json_is_array(json_object_get(j, "files")));
    ts_buf_free(&console);
    json_decref(j);
    pthread_join(st, NULL);
    pthread_join(tt, NULL);
    assert_int_equal(t.conns, 2);
    assert_string_equal(t.got[0], "bmake");
    assert_string_equal(t.got[1], "brun");
    assert_string_equal(t.got[2], "iabc\n");
    exec_ctl_destroy(&ctl);
    ws_conn_free(server_end);
    ws_conn_free(client);
    close(t.lfd);
}

int main(void)
{
    tlog_init("test", NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_console),
        cmocka_unit_test(test_stream_against_a_fake_term),
    };
    return cmocka_run_group_tests_name("gateway_streams_exec", tests, NULL, NULL);
}
