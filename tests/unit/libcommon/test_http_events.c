/* test_http_events.c: event streams (http.h http_reply_events) on a real
 * server with ONE worker thread: the stream's first bytes arrive at once,
 * events sent from another thread arrive, an open stream holds no worker
 * (another request on the one worker is answered meanwhile), a client that
 * hangs up is noticed by http_events_alive and the stream freed, and an
 * ended stream closes its response. A local request gets what was queued. */
#include "libcommon/http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
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

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static http_event_stream *g_es;

static void h_events(http_req *req, http_resp *resp, void *ctx)
{
    (void)ctx;
    http_event_stream *es = http_reply_events(req, resp);
    assert_true(http_events_comment(es, "open"));
    pthread_mutex_lock(&g_mu);
    g_es = es;
    pthread_mutex_unlock(&g_mu);
}

static void h_hello(http_req *req, http_resp *resp, void *ctx)
{
    (void)req, (void)ctx;
    http_reply(resp, 200, "text/plain", "hi", 2);
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    struct timeval tv = {.tv_sec = 3};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

/* Read until want appears in what came (or 3 s): whether it did. */
static bool read_until(int fd, char *buf, size_t cap, size_t *got, const char *want)
{
    while (!strstr(buf, want)) {
        ssize_t n = recv(fd, buf + *got, cap - 1 - *got, 0);
        if (n <= 0) return false;
        *got += (size_t)n;
        buf[*got] = '\0';
    }
    return true;
}

static http_event_stream *take_stream(void)
{
    for (int i = 0; i < 300; i++) {
        pthread_mutex_lock(&g_mu);
        http_event_stream *es = g_es;
        g_es = NULL;
        pthread_mutex_unlock(&g_mu);
        if (es) return es;
        usleep(10000);
    }
    fail_msg("no stream was opened");
    return NULL;
}

static void test_stream_on_one_worker(void **state)
{
    (void)state;
    http_router *r = http_router_new();
    http_route(r, "GET", "/events", h_events, NULL);
    http_route(r, "GET", "/hello", h_hello, NULL);
    http_server_opts o = {.listen = "127.0.0.1:0",
                          .max_body = 1024,
                          .threads = 1,
                          .conn_timeout_s = 30,
                          .service = "test"};
    ts_err err = {{0}};
    http_server *s = http_server_start(&o, r, &err);
    assert_non_null(s);
    int port = http_server_port(s);

    int fd = connect_to(port);
    const char *get = "GET /events HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(send(fd, get, strlen(get), 0), (ssize_t)strlen(get));
    char buf[8192] = "";
    size_t got = 0;
    assert_true(read_until(fd, buf, sizeof(buf), &got, ": open\n\n"));
    assert_non_null(strstr(buf, "Content-Type: text/event-stream"));
    http_event_stream *es = take_stream();
    assert_int_equal(http_events_open_count(), 1);

    /* the one worker is free: another connection is answered */
    int fd2 = connect_to(port);
    const char *hello = "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert_int_equal(send(fd2, hello, strlen(hello), 0), (ssize_t)strlen(hello));
    char b2[2048] = "";
    size_t g2 = 0;
    assert_true(read_until(fd2, b2, sizeof(b2), &g2, "hi"));
    close(fd2);

    /* an event from this thread arrives */
    assert_true(http_events_send(es, "thing", "{\"a\":1}"));
    assert_true(read_until(fd, buf, sizeof(buf), &got, "event: thing\ndata: {\"a\":1}\n\n"));
    assert_true(http_events_alive(es));

    /* the client hangs up: noticed, the response let go */
    close(fd);
    bool gone = false;
    for (int i = 0; i < 200 && !gone; i++) {
        gone = !http_events_alive(es) && http_events_open_count() == 0;
        if (!gone) usleep(10000);
    }
    assert_true(gone);
    assert_false(http_events_send(es, "late", "{}"));
    http_events_release(es);

    /* an ended stream ends its response (the chunked body's last chunk) */
    fd = connect_to(port);
    assert_int_equal(send(fd, get, strlen(get), 0), (ssize_t)strlen(get));
    got = 0;
    buf[0] = '\0';
    assert_true(read_until(fd, buf, sizeof(buf), &got, ": open\n\n"));
    es = take_stream();
    assert_true(http_events_send(es, "last", "{}"));
    http_events_end(es);
    assert_true(read_until(fd, buf, sizeof(buf), &got, "event: last\ndata: {}\n\n\r\n0\r\n\r\n"));
    close(fd);
    http_events_release(es);

    http_server_stop(s);
    http_router_free(r);
}

static void test_local_request(void **state)
{
    (void)state;
    http_req *req = http_req_new_local("GET", "/events", NULL, NULL, 0);
    http_resp *resp = http_resp_new();
    http_event_stream *es = http_reply_events(req, resp);
    assert_int_equal(http_resp_status(resp), 200);
    assert_string_equal(http_resp_header(resp, "Content-Type"), "text/event-stream");
    assert_true(http_events_send(es, "a", "1"));
    assert_true(http_events_send(es, NULL, "2"));
    size_t len = 0;
    char *body = http_local_stream_body(req, resp, &len);
    assert_string_equal(body, "event: a\ndata: 1\n\ndata: 2\n\n");
    free(body);
    http_events_release(es);
    http_req_free_local(req);
    http_resp_free(resp);
    assert_int_equal(http_events_open_count(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local_request),
        cmocka_unit_test(test_stream_on_one_worker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
