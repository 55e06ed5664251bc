/* test_http_stream.c: streaming routes (request bodies in chunks, past
 * max_body) and streamed response bodies (a file descriptor, a reader), on a
 * real server on a loopback ephemeral port (an upload that stalls gets 408,
 * a slow but steady one goes through), and the same routes dispatched
 * locally without a server. */
#include "libcommon/http.h"
#include "libcommon/httpc.h"
#include "libcommon/log.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
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
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#define MAX_BODY 1024
#define BIG ((size_t)24 * 1024 * 1024)

static http_router *g_router;
static http_server *g_srv;
static httpc *g_client;
static int g_port;
static char g_file[64];
static atomic_int g_done, g_done_completed, g_released;

/* ---- a streaming upload: counts bytes and a checksum ----------------------- */

typedef struct up {
    char name[64];
    uint64_t len, sum;
    uint64_t limit; /* refuse past this many bytes (0: none) */
} up;

static void *up_begin(http_req *req, http_resp *resp, void *ctx)
{
    (void)ctx;
    const char *name = http_param(req, "name");
    if (strcmp(name, "refuse") == 0) {
        http_problem(resp, 401, "auth-failed", NULL, "refused before the body");
        return NULL;
    }
    up *u = ts_calloc(1, sizeof(*u));
    ts_strlcpy(u->name, name, sizeof(u->name));
    const char *lim = http_query_arg(req, "limit");
    if (lim) u->limit = strtoull(lim, NULL, 10);
    return u;
}

static bool up_body(http_req *req, http_resp *resp, void *state, const char *data, size_t len)
{
    (void)req;
    up *u = state;
    if (u->limit && u->len + len > u->limit) {
        http_problem(resp, 413, "request-too-large", NULL, "past %llu bytes",
                     (unsigned long long)u->limit);
        return false;
    }
    for (size_t i = 0; i < len; i++)
        u->sum = u->sum * 31 + (unsigned char)data[i];
    u->len += len;
    return true;
}

static void up_end(http_req *req, http_resp *resp, void *state)
{
    up *u = state;
    json_t *o =
        json_pack("{s:s, s:s, s:I, s:I}", "name", u->name, "param", http_param(req, "name"), "len",
                  (json_int_t)u->len, "sum", (json_int_t)(u->sum & 0x7fffffffffffffffULL));
    http_reply_json(resp, 201, o);
}

static void up_done(void *state, bool completed)
{
    atomic_fetch_add(&g_done, 1);
    if (completed) atomic_fetch_add(&g_done_completed, 1);
    free(state);
}

static const http_stream_handler UP = {up_begin, up_body, up_end, up_done};

/* ---- streamed responses ------------------------------------------------------- */

static void h_file(http_req *req, http_resp *resp, void *ctx)
{
    (void)ctx;
    int fd = open(g_file, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    uint64_t off = strtoull(http_query_arg(req, "off") ?: "0", NULL, 10);
    uint64_t len = strtoull(http_query_arg(req, "len") ?: "0", NULL, 10);
    http_set_header(resp, "X-Extra", "yes");
    http_reply_fd(req, resp, 200, "application/octet-stream", fd, off, len);
}

typedef struct gen {
    uint64_t total;
} gen;

/* Bytes 'a' + pos % 26, total of them. */
static long gen_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    gen *g = cls;
    if (pos >= g->total) return 0;
    size_t n = g->total - pos < max ? (size_t)(g->total - pos) : max;
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)('a' + (pos + i) % 26);
    return (long)n;
}

static void gen_release(void *cls)
{
    atomic_fetch_add(&g_released, 1);
    free(cls);
}

static void h_gen(http_req *req, http_resp *resp, void *ctx)
{
    (void)ctx;
    gen *g = ts_calloc(1, sizeof(*g));
    g->total = strtoull(http_query_arg(req, "n") ?: "0", NULL, 10);
    bool known = http_query_arg(req, "known") != NULL;
    http_reply_reader(req, resp, 200, "text/plain", known ? g->total : HTTP_SIZE_UNKNOWN, gen_read,
                      gen_release, g);
    if (http_query_arg(req, "replace"))
        http_problem(resp, 409, "conflict", NULL, "replaced after a streamed reply");
}

static void h_plain(http_req *req, http_resp *resp, void *ctx)
{
    (void)ctx;
    http_reply_json(resp, 200, json_pack("{s:I}", "len", (json_int_t)req->body_len));
}

static http_router *make_router(void)
{
    http_router *r = http_router_new();
    http_route_stream(r, "PATCH", "/up/{name}", &UP, NULL);
    http_route(r, "GET", "/up/{name}", h_plain, NULL);
    http_route(r, "POST", "/plain", h_plain, NULL);
    http_route(r, "GET", "/file", h_file, NULL);
    http_route(r, "GET", "/gen", h_gen, NULL);
    return r;
}

static int setup(void **state)
{
    (void)state;
    tlog_init("test", NULL);
    ts_strlcpy(g_file, "/tmp/test_http_stream.XXXXXX", sizeof(g_file));
    int fd = mkstemp(g_file);
    if (fd < 0) return -1;
    char *data = ts_malloc(3 * 1024 * 1024);
    for (size_t i = 0; i < 3 * 1024 * 1024; i++)
        data[i] = (char)(i * 7 + (i >> 12));
    if (write(fd, data, 3 * 1024 * 1024) != 3 * 1024 * 1024) return -1;
    free(data);
    close(fd);
    g_router = make_router();
    http_server_opts o = {.listen = "127.0.0.1:0",
                          .max_body = MAX_BODY,
                          .threads = 2,
                          .conn_timeout_s = 5,
                          .body_timeout_ms = 1000,
                          .service = "test"};
    ts_err err = {{0}};
    g_srv = http_server_start(&o, g_router, &err);
    if (!g_srv) {
        fprintf(stderr, "start: %s\n", err.msg);
        return -1;
    }
    g_port = http_server_port(g_srv);
    g_client = httpc_new(20000);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    httpc_free(g_client);
    http_server_stop(g_srv);
    http_router_free(g_router);
    unlink(g_file);
    return 0;
}

/* ---- helpers -------------------------------------------------------------------- */

static long call(const char *method, const char *path, const char *const *headers, const char *body,
                 size_t len, httpc_resp *out)
{
    char *url = ts_asprintf("http://127.0.0.1:%d%s", g_port, path);
    ts_err err = {{0}};
    bool ok = httpc_request(g_client, method, url, headers, body, len, NULL, out, &err);
    free(url);
    if (!ok) fail_msg("request failed: %s", err.msg);
    return out->status;
}

static void wait_done(int want)
{
    for (int i = 0; i < 400 && atomic_load(&g_done) < want; i++)
        usleep(5000);
    assert_int_equal(atomic_load(&g_done), want);
}

static uint64_t checksum(const char *data, size_t len)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < len; i++)
        sum = sum * 31 + (unsigned char)data[i];
    return sum & 0x7fffffffffffffffULL;
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

/* ---- tests ---------------------------------------------------------------------- */

/* A body far past max_body reaches the stream callbacks whole, in chunks. */
static void test_stream_big_body(void **state)
{
    (void)state;
    int before = atomic_load(&g_done), before_ok = atomic_load(&g_done_completed);
    char *data = ts_malloc(BIG);
    for (size_t i = 0; i < BIG; i++)
        data[i] = (char)(i ^ (i >> 9));
    httpc_resp r;
    assert_int_equal(call("PATCH", "/up/big%20one", NULL, data, BIG, &r), 201);
    json_t *o = json_loadb(r.body, r.body_len, 0, NULL);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "name")), "big one");
    assert_string_equal(json_string_value(json_object_get(o, "param")), "big one");
    assert_int_equal(json_integer_value(json_object_get(o, "len")), BIG);
    assert_true((uint64_t)json_integer_value(json_object_get(o, "sum")) == checksum(data, BIG));
    json_decref(o);
    httpc_resp_free(&r);
    free(data);
    wait_done(before + 1);
    assert_int_equal(atomic_load(&g_done_completed), before_ok + 1);

    /* An empty body: begin, end, done. */
    assert_int_equal(call("PATCH", "/up/empty", NULL, NULL, 0, &r), 201);
    httpc_resp_free(&r);
    wait_done(before + 2);

    /* Buffered routes keep their limit. */
    char *big = ts_malloc(MAX_BODY * 4);
    memset(big, 'x', MAX_BODY * 4);
    assert_int_equal(call("POST", "/plain", NULL, big, MAX_BODY * 4, &r), 413);
    httpc_resp_free(&r);
    free(big);
}

/* begin refuses: the answer comes without the body being read (or wanted). */
static void test_stream_refused_early(void **state)
{
    (void)state;
    int before = atomic_load(&g_done);
    int fd = connect_to(g_port);
    const char *head = "PATCH /up/refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n"
                       "Expect: 100-continue\r\n\r\n";
    assert_true(send(fd, head, strlen(head), MSG_NOSIGNAL) == (ssize_t)strlen(head));
    char buf[2048];
    ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_non_null(strstr(buf, "HTTP/1.1 401"));
    assert_null(strstr(buf, "100 Continue"));
    close(fd);
    wait_done(before + 1);
}

/* body stops mid-way: the rest is read and dropped, then its answer goes out. */
static void test_stream_stopped_mid_body(void **state)
{
    (void)state;
    int before = atomic_load(&g_done), before_ok = atomic_load(&g_done_completed);
    size_t len = 4 * 1024 * 1024;
    char *data = ts_malloc(len);
    memset(data, 'y', len);
    httpc_resp r;
    long st = call("PATCH", "/up/limited?limit=100000", NULL, data, len, &r);
    assert_int_equal(st, 413);
    assert_non_null(strstr(r.body, "past 100000 bytes"));
    httpc_resp_free(&r);
    free(data);
    wait_done(before + 1);
    /* The response went out: completed even though the body was cut. */
    assert_true(atomic_load(&g_done_completed) <= before_ok + 1);
}

/* The client goes away mid-body: done(state, false) all the same. */
static void test_stream_client_abort(void **state)
{
    (void)state;
    int before = atomic_load(&g_done), before_ok = atomic_load(&g_done_completed);
    int fd = connect_to(g_port);
    const char *head = "PATCH /up/abort HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n";
    assert_true(send(fd, head, strlen(head), MSG_NOSIGNAL) > 0);
    char chunk[4096];
    memset(chunk, 'z', sizeof(chunk));
    for (int i = 0; i < 10; i++)
        assert_true(send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL) > 0);
    usleep(50 * 1000);
    close(fd);
    wait_done(before + 1);
    assert_int_equal(atomic_load(&g_done_completed), before_ok);
}

/* Read what the server sends until it closes (or 5 s pass). */
static size_t read_all(int fd, char *buf, size_t size)
{
    size_t got = 0;
    for (;;) {
        ssize_t k = recv(fd, buf + got, size - 1 - got, 0);
        if (k <= 0) break;
        got += (size_t)k;
    }
    buf[got] = '\0';
    return got;
}

/* An upload that pauses longer than http.body_timeout (1 s here) between two
 * chunks: 408 problem JSON, and done(state, false): the handler cleans up. */
static void test_stream_stalled(void **state)
{
    (void)state;
    int before = atomic_load(&g_done), before_ok = atomic_load(&g_done_completed);
    int fd = connect_to(g_port);
    const char *head = "PATCH /up/stall HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nabcd";
    assert_true(send(fd, head, strlen(head), MSG_NOSIGNAL) > 0);
    struct timeval t0, t1;
    gettimeofday(&t0, NULL);
    char buf[4096];
    read_all(fd, buf, sizeof(buf));
    gettimeofday(&t1, NULL);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_usec - t0.tv_usec) / 1000;
    assert_non_null(strstr(buf, "HTTP/1.1 408"));
    assert_non_null(strstr(buf, "application/problem+json"));
    assert_true(ms >= 900 && ms < 3000);
    close(fd);
    wait_done(before + 1);
    assert_int_equal(atomic_load(&g_done_completed), before_ok);
}

/* An upload slower than the timeout in all, but never pausing that long:
 * received whole. */
static void test_stream_slow_but_steady(void **state)
{
    (void)state;
    int before = atomic_load(&g_done);
    int fd = connect_to(g_port);
    const char *head = "PATCH /up/steady HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n"
                       "Connection: close\r\n\r\n";
    assert_true(send(fd, head, strlen(head), MSG_NOSIGNAL) > 0);
    for (int i = 0; i < 6; i++) {
        usleep(400 * 1000);
        assert_true(send(fd, "x", 1, MSG_NOSIGNAL) == 1);
    }
    char buf[4096];
    read_all(fd, buf, sizeof(buf));
    assert_non_null(strstr(buf, "HTTP/1.1 201"));
    assert_non_null(strstr(buf, "\"len\":6"));
    close(fd);
    wait_done(before + 1);
}

/* The stream route's method is listed next to the buffered ones in a 405. */
static void test_stream_method_not_allowed(void **state)
{
    (void)state;
    httpc_resp r;
    assert_int_equal(call("DELETE", "/up/x", NULL, NULL, 0, &r), 405);
    httpc_resp_free(&r);
    assert_int_equal(call("GET", "/up/x", NULL, NULL, 0, &r), 200); /* the buffered GET */
    httpc_resp_free(&r);
}

static void test_reply_fd(void **state)
{
    (void)state;
    int fd = open(g_file, O_RDONLY);
    size_t total = 3 * 1024 * 1024;
    char *want = ts_malloc(total);
    assert_int_equal(read(fd, want, total), (ssize_t)total);
    close(fd);

    httpc_resp r;
    char *path = ts_asprintf("/file?off=0&len=%zu", total);
    assert_int_equal(call("GET", path, NULL, NULL, 0, &r), 200);
    assert_int_equal(r.body_len, total);
    assert_memory_equal(r.body, want, total);
    httpc_resp_free(&r);
    free(path);

    assert_int_equal(call("GET", "/file?off=1000000&len=12345", NULL, NULL, 0, &r), 200);
    assert_int_equal(r.body_len, 12345);
    assert_memory_equal(r.body, want + 1000000, 12345);
    httpc_resp_free(&r);

    assert_int_equal(call("GET", "/file?off=5&len=0", NULL, NULL, 0, &r), 200);
    assert_int_equal(r.body_len, 0);
    httpc_resp_free(&r);

    /* Headers travel with a streamed body; HEAD has the length but no body. */
    int s = connect_to(g_port);
    const char *req = "HEAD /file?off=0&len=777 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert_true(send(s, req, strlen(req), MSG_NOSIGNAL) > 0);
    char buf[4096];
    size_t got = 0;
    for (ssize_t n; (n = recv(s, buf + got, sizeof(buf) - 1 - got, 0)) > 0;)
        got += (size_t)n;
    buf[got] = '\0';
    close(s);
    assert_non_null(strstr(buf, "200"));
    assert_non_null(strstr(buf, "Content-Length: 777"));
    assert_non_null(strstr(buf, "X-Extra: yes"));
    assert_true(strstr(buf, "\r\n\r\n")[4] == '\0');
    free(want);
}

static void test_reply_reader(void **state)
{
    (void)state;
    int rel = atomic_load(&g_released);
    httpc_resp r;
    /* Unknown size: chunked. */
    assert_int_equal(call("GET", "/gen?n=1000003", NULL, NULL, 0, &r), 200);
    assert_int_equal(r.body_len, 1000003);
    for (size_t i = 0; i < r.body_len; i += 4099)
        assert_int_equal(r.body[i], 'a' + i % 26);
    httpc_resp_free(&r);
    /* Known size. */
    assert_int_equal(call("GET", "/gen?n=70000&known=1", NULL, NULL, 0, &r), 200);
    assert_int_equal(r.body_len, 70000);
    assert_int_equal(r.body[69999], 'a' + 69999 % 26);
    httpc_resp_free(&r);
    /* Replaced by a problem: the problem goes out, the reader is released. */
    assert_int_equal(call("GET", "/gen?n=10&replace=1", NULL, NULL, 0, &r), 409);
    assert_non_null(strstr(r.body, "replaced"));
    httpc_resp_free(&r);
    for (int i = 0; i < 200 && atomic_load(&g_released) < rel + 3; i++)
        usleep(5000);
    assert_int_equal(atomic_load(&g_released), rel + 3);
}

/* Without a server: the same callbacks on the buffered body. */
static void test_local_dispatch(void **state)
{
    (void)state;
    int before = atomic_load(&g_done);
    http_req *req = http_req_new_local("PATCH", "/up/local", NULL, "hello", 5);
    http_resp *resp = http_resp_new();
    http_router_dispatch(g_router, req, resp);
    assert_int_equal(http_resp_status(resp), 201);
    json_t *o = json_loads(http_resp_body(resp, NULL), 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(o, "len")), 5);
    json_decref(o);
    http_resp_free(resp);
    http_req_free_local(req);
    assert_int_equal(atomic_load(&g_done), before + 1);

    req = http_req_new_local("GET", "/gen?n=100000", NULL, NULL, 0);
    resp = http_resp_new();
    http_router_dispatch(g_router, req, resp);
    size_t len = 0;
    char *body = http_local_stream_body(req, resp, &len);
    assert_non_null(body);
    assert_int_equal(len, 100000);
    assert_int_equal(body[99999], 'a' + 99999 % 26);
    free(body);
    http_resp_free(resp);
    http_req_free_local(req);

    req = http_req_new_local("GET", "/file?off=10&len=20", NULL, NULL, 0);
    resp = http_resp_new();
    http_router_dispatch(g_router, req, resp);
    body = http_local_stream_body(req, resp, &len);
    assert_int_equal(len, 20);
    free(body);
    http_resp_free(resp);
    http_req_free_local(req);
}

/* Many concurrent streams on two worker threads. */
typedef struct par {
    int idx;
    bool ok;
} par;

static void *par_upload(void *arg)
{
    par *p = arg;
    httpc *c = httpc_new(20000);
    size_t len = 1024 * 1024 + (size_t)p->idx * 999;
    char *data = ts_malloc(len);
    for (size_t i = 0; i < len; i++)
        data[i] = (char)(i * (size_t)(p->idx + 3));
    char *url = ts_asprintf("http://127.0.0.1:%d/up/p%d", g_port, p->idx);
    httpc_resp r;
    ts_err err = {{0}};
    if (httpc_request(c, "PATCH", url, NULL, data, len, NULL, &r, &err)) {
        json_t *o = json_loadb(r.body, r.body_len, 0, NULL);
        p->ok = r.status == 201 && (size_t)json_integer_value(json_object_get(o, "len")) == len &&
                (uint64_t)json_integer_value(json_object_get(o, "sum")) == checksum(data, len);
        json_decref(o);
        httpc_resp_free(&r);
    }
    free(url);
    free(data);
    httpc_free(c);
    return NULL;
}

static void test_stream_concurrent(void **state)
{
    (void)state;
    enum { N = 8 };
    pthread_t t[N];
    par p[N];
    for (int i = 0; i < N; i++) {
        p[i] = (par){.idx = i};
        pthread_create(&t[i], NULL, par_upload, &p[i]);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        assert_true(p[i].ok);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_big_body),
        cmocka_unit_test(test_stream_refused_early),
        cmocka_unit_test(test_stream_stopped_mid_body),
        cmocka_unit_test(test_stream_client_abort),
        cmocka_unit_test(test_stream_stalled),
        cmocka_unit_test(test_stream_slow_but_steady),
        cmocka_unit_test(test_stream_method_not_allowed),
        cmocka_unit_test(test_reply_fd),
        cmocka_unit_test(test_reply_reader),
        cmocka_unit_test(test_local_dispatch),
        cmocka_unit_test(test_stream_concurrent),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
