/* test_httpc.c: httpc_request_ex against a real server on a loopback port:
 * response headers kept by name (the final response's), a per-call time
 * limit that says it timed out, a per-call body limit; and the request's
 * local slot, set by a handler and seen by on_complete. */
#include "libcommon/http.h"
#include "libcommon/httpc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static http_server *g_srv;
static http_router *g_router;
static httpc *g_client;
static char g_base[64];

static void h_headers(http_req *req, http_resp *resp, void *ctx)
{
    (void)req;
    (void)ctx;
    http_reply(resp, 429, "application/problem+json", "{}", 2);
    http_set_header(resp, "Retry-After", "  7 ");
    http_set_header(resp, "X-Not-Kept", "x");
    http_set_header(resp, "Location", "/elsewhere");
}

static void h_slow(http_req *req, http_resp *resp, void *ctx)
{
    (void)req;
    (void)ctx;
    usleep(300 * 1000);
    http_reply(resp, 200, "text/plain", "slow", 4);
}

static void h_big(http_req *req, http_resp *resp, void *ctx)
{
    (void)req;
    (void)ctx;
    static char buf[4096];
    memset(buf, 'x', sizeof(buf));
    http_reply(resp, 200, "text/plain", buf, sizeof(buf));
}

/* Leaves a heap string in the request's local slot. */
static void h_local(http_req *req, http_resp *resp, void *ctx)
{
    (void)ctx;
    req->local = strdup(http_query_arg(req, "v") ? http_query_arg(req, "v") : "");
    http_reply(resp, 204, "text/plain", "", 0);
}

static char g_seen[64];
static atomic_int g_seen_n;

static void on_complete(const http_req *req, int status, int64_t latency_us, void *ctx)
{
    (void)status;
    (void)latency_us;
    (void)ctx;
    if (req->local) {
        ts_strlcpy(g_seen, req->local, sizeof(g_seen));
        free(req->local);
        atomic_fetch_add(&g_seen_n, 1);
    }
}

static int setup(void **state)
{
    (void)state;
    http_router *r = g_router = http_router_new();
    http_route(r, "GET", "/headers", h_headers, NULL);
    http_route(r, "GET", "/slow", h_slow, NULL);
    http_route(r, "GET", "/big", h_big, NULL);
    http_route(r, "GET", "/local", h_local, NULL);
    http_server_opts o = {.listen = "127.0.0.1:0",
                          .max_body = 1024,
                          .threads = 2,
                          .conn_timeout_s = 5,
                          .service = "test",
                          .on_complete = on_complete};
    ts_err err = {{0}};
    g_srv = http_server_start(&o, r, &err);
    assert_non_null(g_srv);
    snprintf(g_base, sizeof(g_base), "http://127.0.0.1:%d", http_server_port(g_srv));
    g_client = httpc_new(5000);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    httpc_free(g_client);
    http_server_stop(g_srv);
    http_router_free(g_router);
    return 0;
}

static char *url(const char *path)
{
    static char buf[128];
    snprintf(buf, sizeof(buf), "%s%s", g_base, path);
    return buf;
}

/* One path segment or query value: unreserved characters kept, the rest
 * (UTF-8 bytes, '/', '%', '?', space) as %XX, and a whole "." or ".." too. */
static void test_escape(void **state)
{
    (void)state;
    const struct {
        const char *in, *out;
    } cases[] = {
        {"abc-XYZ_09.~", "abc-XYZ_09.~"},
        {"a b/c?d%e&f=g", "a%20b%2Fc%3Fd%25e%26f%3Dg"},
        {"caf\xc3\xa9", "caf%C3%A9"},
        {".", "%2E"},
        {"..", "%2E%2E"},
        {"...", "..."},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got = httpc_escape(cases[i].in);
        assert_string_equal(got, cases[i].out);
        free(got);
    }
}

static void test_kept_headers(void **state)
{
    (void)state;
    static const char *const keep[] = {"Retry-After", "location", "Allow", NULL};
    httpc_call call = {.keep_headers = keep};
    httpc_resp r;
    ts_err err = {{0}};
    assert_true(
        httpc_request_ex(g_client, &call, "GET", url("/headers"), NULL, NULL, 0, NULL, &r, &err));
    assert_int_equal(r.status, 429);
    assert_string_equal(r.content_type, "application/problem+json");
    assert_int_equal(r.n_headers, 2);
    assert_string_equal(r.header_names[0], "Retry-After");
    assert_string_equal(r.header_values[0], "7");
    assert_string_equal(r.header_names[1], "location"); /* the name as asked */
    assert_string_equal(r.header_values[1], "/elsewhere");
    assert_false(r.timed_out);
    httpc_resp_free(&r);
    /* without keep_headers: none */
    assert_true(httpc_request(g_client, "GET", url("/headers"), NULL, NULL, 0, NULL, &r, &err));
    assert_int_equal(r.n_headers, 0);
    httpc_resp_free(&r);
}

static void test_call_timeout(void **state)
{
    (void)state;
    httpc_call call = {.timeout_ms = 100, .connect_timeout_ms = 1000};
    httpc_resp r;
    ts_err err = {{0}};
    assert_false(
        httpc_request_ex(g_client, &call, "GET", url("/slow"), NULL, NULL, 0, NULL, &r, &err));
    assert_true(r.timed_out);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(err.msg, "/slow"));
    /* the client's own limit (5 s) is enough */
    assert_true(httpc_request(g_client, "GET", url("/slow"), NULL, NULL, 0, NULL, &r, &err));
    assert_int_equal(r.status, 200);
    assert_false(r.timed_out);
    httpc_resp_free(&r);
    /* nothing listening: no answer, not a timeout */
    httpc_resp r2;
    assert_false(httpc_request_ex(g_client, &call, "GET", "http://127.0.0.1:1/x", NULL, NULL, 0,
                                  NULL, &r2, &err));
    assert_false(r2.timed_out);
}

static void test_call_max_body(void **state)
{
    (void)state;
    httpc_call call = {.max_body = 1000};
    httpc_resp r;
    ts_err err = {{0}};
    assert_false(
        httpc_request_ex(g_client, &call, "GET", url("/big"), NULL, NULL, 0, NULL, &r, &err));
    assert_non_null(strstr(err.msg, "larger than 1000 bytes"));
    call.max_body = 4096;
    assert_true(
        httpc_request_ex(g_client, &call, "GET", url("/big"), NULL, NULL, 0, NULL, &r, &err));
    assert_int_equal(r.body_len, 4096);
    httpc_resp_free(&r);
}

static void test_local_slot_reaches_on_complete(void **state)
{
    (void)state;
    httpc_resp r;
    ts_err err = {{0}};
    int before = atomic_load(&g_seen_n);
    assert_true(
        httpc_request(g_client, "GET", url("/local?v=caller-1"), NULL, NULL, 0, NULL, &r, &err));
    assert_int_equal(r.status, 204);
    httpc_resp_free(&r);
    for (int i = 0; i < 100 && atomic_load(&g_seen_n) == before; i++)
        usleep(10 * 1000);
    assert_int_equal(atomic_load(&g_seen_n), before + 1);
    assert_string_equal(g_seen, "caller-1");
    /* a request whose handler leaves nothing: on_complete sees NULL */
    assert_true(httpc_request(g_client, "GET", url("/headers"), NULL, NULL, 0, NULL, &r, &err));
    httpc_resp_free(&r);
    usleep(50 * 1000);
    assert_int_equal(atomic_load(&g_seen_n), before + 1);
    /* a local request starts with an empty slot */
    http_req *req = http_req_new_local("GET", "/", NULL, NULL, 0);
    assert_null(req->local);
    http_req_free_local(req);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_kept_headers),
        cmocka_unit_test(test_call_timeout),
        cmocka_unit_test(test_call_max_body),
        cmocka_unit_test(test_local_slot_reaches_on_complete),
    };
    return cmocka_run_group_tests_name("httpc", tests, setup, teardown);
}
