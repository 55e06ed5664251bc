/* Unit tests: the gateway's forwarding (proxy.h) against a real upstream on
 * a loopback port: what is sent (the caller's headers, the request id, the
 * body and its type), what is relayed (status, body, the relayed headers
 * only), a bare 5xx wrapped, an upstream that is down or too slow answered
 * with a 503 and counted, proxy_call_json's answers; the targets; and the
 * verified caller kept in the request (identity.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "services/gateway/identity.h"
#include "services/gateway/proxy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define U1 "11111111-1111-4111-8111-111111111111"
#define AK1 "AKTEST00000000000001"

static http_server *g_srv;
static http_router *g_router;
static upstream g_up = {.name = "test", .service = "tessera-test"};
static const gw_identity g_id = {.access_key = AK1, .user_id = U1, .role = "user"};

/* Echoes what arrived, with headers worth relaying and one that is not. */
static void h_echo(http_req *req, http_resp *resp, void *ctx)
{
    (void)ctx;
    json_t *o = json_pack(
        "{s:s, s:s, s:s%, s:s?, s:s?, s:s?, s:s?}", "method", req->method, "target", req->target,
        "body", req->body, req->body_len, "caller", http_header(req, "X-Tessera-Caller"),
        "caller_ak", http_header(req, "X-Tessera-Caller-Access-Key"), "request_id",
        http_header(req, "X-Request-ID"), "content_type", http_header(req, "Content-Type"));
    http_reply_json(resp, 202, o);
    http_set_header(resp, "Location", "/v1/there");
    http_set_header(resp, "Retry-After", "3");
    http_set_header(resp, "X-Internal", "not for clients");
}

static void h_bare(http_req *req, http_resp *resp, void *ctx)
{
    (void)ctx;
    int status = atoi(http_param(req, "status"));
    http_reply(resp, status, "text/plain", "oops", 4);
}

static void h_slow(http_req *req, http_resp *resp, void *ctx)
{
    (void)req;
    (void)ctx;
    usleep(300 * 1000);
    http_reply_json(resp, 200, json_object());
}

static void h_text(http_req *req, http_resp *resp, void *ctx)
{
    (void)req;
    (void)ctx;
    http_reply(resp, 200, "text/plain", "plain", 5);
}

/* 204 and an empty 200, as tessera-vfolder answers a delete. */
static void h_empty(http_req *req, http_resp *resp, void *ctx)
{
    (void)ctx;
    http_reply(resp, atoi(http_param(req, "status")), NULL, NULL, 0);
    http_set_header(resp, "Location", "/v1/gone");
}

static int setup(void **state)
{
    (void)state;
    http_router *r = g_router = http_router_new();
    http_route(r, "*", "/echo/{x}", h_echo, NULL);
    http_route(r, "GET", "/bare/{status}", h_bare, NULL);
    http_route(r, "GET", "/slow", h_slow, NULL);
    http_route(r, "GET", "/text", h_text, NULL);
    http_route(r, "*", "/empty/{status}", h_empty, NULL);
    http_server_opts o = {.listen = "127.0.0.1:0",
                          .max_body = 4096,
                          .threads = 2,
                          .conn_timeout_s = 5,
                          .service = "upstream"};
    ts_err err = {{0}};
    g_srv = http_server_start(&o, r, &err);
    assert_non_null(g_srv);
    g_up.url = ts_asprintf("http://127.0.0.1:%d", http_server_port(g_srv));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    http_server_stop(g_srv);
    http_router_free(g_router);
    free(g_up.url);
    return 0;
}

static json_t *body_of(http_resp *resp)
{
    size_t len = 0;
    const char *b = http_resp_body(resp, &len);
    return json_loadb(b, len, 0, NULL);
}

static const char *str(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static void test_forward_sends_and_relays(void **state)
{
    (void)state;
    static const char *const hdrs[] = {"Content-Type: application/x-test",
                                       "X-Request-ID: req-forward-1", NULL};
    http_req *req = http_req_new_local("PATCH", "/session/a%20b?x=1", hdrs, "abc", 3);
    http_resp *resp = http_resp_new();
    proxy_forward(&g_up, 5000, req, resp, "/echo/a%20b?x=1", &g_id, "hello", 5);
    assert_int_equal(http_resp_status(resp), 202);
    json_t *o = body_of(resp);
    assert_string_equal(str(o, "method"), "PATCH");
    assert_string_equal(str(o, "target"), "/echo/a%20b?x=1");
    assert_string_equal(str(o, "body"), "hello");
    assert_string_equal(str(o, "caller"), U1);
    assert_string_equal(str(o, "caller_ak"), AK1);
    assert_string_equal(str(o, "request_id"), "req-forward-1");
    assert_string_equal(str(o, "content_type"), "application/x-test");
    json_decref(o);
    assert_string_equal(http_resp_header(resp, "Location"), "/v1/there");
    assert_string_equal(http_resp_header(resp, "Retry-After"), "3");
    assert_null(http_resp_header(resp, "X-Internal"));
    http_resp_free(resp);
    http_req_free_local(req);
    /* anonymous, no body: no caller, no content type */
    req = http_req_new_local("GET", "/x", NULL, NULL, 0);
    resp = http_resp_new();
    proxy_forward(&g_up, 5000, req, resp, "/echo/y", NULL, NULL, 0);
    o = body_of(resp);
    assert_null(str(o, "caller"));
    assert_null(str(o, "content_type"));
    assert_string_equal(str(o, "method"), "GET");
    json_decref(o);
    http_resp_free(resp);
    http_req_free_local(req);
}

/* The status and problem msg of forwarding GET target; *retry_after: the
 * answer had one. */
static int forward_status(const char *target, int64_t timeout_ms, char *msg, size_t size,
                          bool *retry_after)
{
    http_req *req = http_req_new_local("GET", "/x", NULL, NULL, 0);
    http_resp *resp = http_resp_new();
    proxy_forward(&g_up, timeout_ms, req, resp, target, &g_id, NULL, 0);
    int status = http_resp_status(resp);
    json_t *o = body_of(resp);
    ts_strlcpy(msg, str(o, "msg") ? str(o, "msg") : "", size);
    json_decref(o);
    *retry_after = http_resp_header(resp, "Retry-After") != NULL;
    http_resp_free(resp);
    http_req_free_local(req);
    return status;
}

/* An answer without a body is relayed without a Content-Type (Backend.AI's
 * SDK parses any JSON-typed answer). */
static void test_empty_answer_has_no_content_type(void **state)
{
    (void)state;
    static const char *const targets[] = {"/empty/204", "/empty/200"};
    for (size_t i = 0; i < TS_ARRAY_LEN(targets); i++) {
        http_req *req = http_req_new_local("DELETE", "/folders/x", NULL, NULL, 0);
        http_resp *resp = http_resp_new();
        proxy_forward(&g_up, 5000, req, resp, targets[i], &g_id, NULL, 0);
        assert_int_equal(http_resp_status(resp), i == 0 ? 204 : 200);
        assert_null(http_resp_header(resp, "Content-Type"));
        size_t len = 1;
        http_resp_body(resp, &len);
        assert_int_equal(len, 0);
        assert_string_equal(http_resp_header(resp, "Location"), "/v1/gone");
        http_resp_free(resp);
        http_req_free_local(req);
    }
}

static void test_bare_5xx_wrapped(void **state)
{
    (void)state;
    char msg[256];
    bool ra;
    assert_int_equal(forward_status("/bare/500", 5000, msg, sizeof(msg), &ra), 502);
    assert_string_equal(msg, "tessera-test answered 500");
    assert_int_equal(forward_status("/bare/503", 5000, msg, sizeof(msg), &ra), 503);
    /* a 4xx is relayed as it is */
    assert_int_equal(forward_status("/bare/409", 5000, msg, sizeof(msg), &ra), 409);
}

static void test_unanswered_is_503_and_counted(void **state)
{
    (void)state;
    char msg[256];
    bool ra = false;
    uint64_t before = atomic_load(&g_up.failures);
    assert_int_equal(forward_status("/slow", 100, msg, sizeof(msg), &ra), 503);
    assert_string_equal(msg, "tessera-test did not answer within 100 ms; try again later");
    assert_true(ra);
    char *url = g_up.url;
    g_up.url = "http://127.0.0.1:1";
    assert_int_equal(forward_status("/x", 1000, msg, sizeof(msg), &ra), 503);
    assert_string_equal(msg, "tessera-test is not reachable right now; try again later");
    assert_true(ra);
    g_up.url = url;
    assert_int_equal(atomic_load(&g_up.failures), before + 2);
}

static void test_call_json(void **state)
{
    (void)state;
    http_req *req = http_req_new_local("POST", "/x", NULL, NULL, 0);
    http_resp *resp = http_resp_new();
    json_t *body = json_pack("{s:s}", "a", "b"), *out = NULL;
    /* the expected status with an object */
    assert_true(proxy_call_json(&g_up, 5000, "POST", req, resp, "/echo/z", &g_id, body, 202, &out));
    assert_string_equal(str(out, "body"), "{\"a\":\"b\"}");
    assert_string_equal(str(out, "content_type"), "application/json");
    json_decref(out);
    /* another status: relayed */
    assert_false(
        proxy_call_json(&g_up, 5000, "POST", req, resp, "/echo/z", &g_id, body, 200, &out));
    assert_null(out);
    assert_int_equal(http_resp_status(resp), 202);
    /* the expected status without JSON: 502 */
    assert_false(proxy_call_json(&g_up, 5000, "GET", req, resp, "/text", &g_id, NULL, 200, &out));
    assert_int_equal(http_resp_status(resp), 502);
    json_decref(body);
    http_resp_free(resp);
    http_req_free_local(req);
}

static void test_targets(void **state)
{
    (void)state;
    static const struct {
        const char *target, *origin, *v1;
    } cases[] = {
        {"/admin/users?x=1", "/admin/users?x=1", "/v1/admin/users?x=1"},
        {"http://host:8090/folders/a%20b?q#frag", "/folders/a%20b?q#frag", "/v1/folders/a%20b?q"},
        {"http://host", "/", "/v1/"},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(cases); i++) {
        http_req *req = http_req_new_local("GET", cases[i].target, NULL, NULL, 0);
        assert_string_equal(proxy_origin(req), cases[i].origin);
        char *v1 = proxy_v1_target(req);
        assert_string_equal(v1, cases[i].v1);
        free(v1);
        http_req_free_local(req);
    }
}

static void test_identity_in_the_request(void **state)
{
    (void)state;
    http_req *req = http_req_new_local("GET", "/auth/test", NULL, NULL, 0);
    assert_null(identity_of(req));
    gw_identity id = g_id;
    identity_attach(req, &id);
    id.user_id[0] = '\0'; /* a copy was kept */
    assert_string_equal(identity_of(req)->user_id, U1);
    gw_identity other = g_id;
    ts_strlcpy(other.access_key, "AKTEST00000000000002", sizeof(other.access_key));
    identity_attach(req, &other); /* replaces */
    assert_string_equal(identity_of(req)->access_key, "AKTEST00000000000002");
    identity_release(req);
    http_req_free_local(req);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forward_sends_and_relays),
        cmocka_unit_test(test_empty_answer_has_no_content_type),
        cmocka_unit_test(test_bare_5xx_wrapped),
        cmocka_unit_test(test_unanswered_is_503_and_counted),
        cmocka_unit_test(test_call_json),
        cmocka_unit_test(test_targets),
        cmocka_unit_test(test_identity_in_the_request),
    };
    return cmocka_run_group_tests_name("gateway proxy", tests, setup, teardown);
}
