/* test_http_router.c: routing, problem bodies and JSON body parsing, without
 * a network. */
#include "libcommon/deps.h"
#include "libcommon/http.h"
#include "libcommon/log.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* What the last handler saw. */
static char g_seen[256];

static void h_name(http_req *req, http_resp *resp, void *ctx)
{
    snprintf(g_seen, sizeof(g_seen), "%s:%s", (const char *)ctx,
             http_param(req, "name") ? http_param(req, "name") : "(none)");
    http_reply(resp, 200, "text/plain", "ok", 2);
}

static void h_two(http_req *req, http_resp *resp, void *ctx)
{
    (void)ctx;
    snprintf(g_seen, sizeof(g_seen), "two:%s/%s", http_param(req, "a"), http_param(req, "b"));
    http_reply(resp, 204, NULL, NULL, 0);
}

static void h_nothing(http_req *req, http_resp *resp, void *ctx)
{
    (void)req;
    (void)resp;
    (void)ctx;
}

static void h_json(http_req *req, http_resp *resp, void *ctx)
{
    (void)ctx;
    json_t *body = http_json_body(req, resp);
    if (!body) {
        snprintf(g_seen, sizeof(g_seen), "json:NULL");
        return;
    }
    snprintf(g_seen, sizeof(g_seen), "json:ok");
    http_reply_json(resp, 200, body);
}

static http_router *make_router(void)
{
    http_router *r = http_router_new();
    http_route(r, "GET", "/users/{name}", h_name, "param");
    http_route(r, "GET", "/users/me", h_name, "exact");
    http_route(r, "DELETE", "/users/{name}", h_name, "delete");
    http_route(r, "GET", "/pairs/{a}/{b}", h_two, NULL);
    http_route(r, "*", "/any", h_name, "any");
    http_route(r, "GET", "/", h_name, "root");
    http_route(r, "GET", "/nothing", h_nothing, NULL);
    http_route(r, "POST", "/json", h_json, NULL);
    return r;
}

/* Dispatch a request built from a raw target and return the response. */
static http_resp *run(http_router *r, const char *method, const char *target, const char *body)
{
    g_seen[0] = '\0';
    http_req *req = http_req_new_local(method, target, NULL, body, body ? strlen(body) : 0);
    http_resp *resp = http_resp_new();
    http_router_dispatch(r, req, resp);
    assert_int_equal(req->n_params, 0); /* params do not outlive the handler */
    http_req_free_local(req);
    return resp;
}

/* Parse a problem body and check its shape. */
static void assert_problem(http_resp *resp, int status, const char *kind, const char *msg_part)
{
    assert_int_equal(http_resp_status(resp), status);
    assert_string_equal(http_resp_header(resp, "Content-Type"), "application/problem+json");
    size_t len;
    const char *body = http_resp_body(resp, &len);
    json_error_t jerr;
    json_t *o = json_loadb(body, len, 0, &jerr);
    assert_non_null(o);
    assert_true(json_is_object(o));
    char want[128];
    snprintf(want, sizeof(want), "https://api.backend.ai/probs/%s", kind);
    assert_string_equal(json_string_value(json_object_get(o, "type")), want);
    assert_non_null(json_string_value(json_object_get(o, "title")));
    assert_true(strlen(json_string_value(json_object_get(o, "title"))) > 0);
    const char *msg = json_string_value(json_object_get(o, "msg"));
    assert_non_null(msg);
    if (msg_part && !strstr(msg, msg_part)) fail_msg("msg \"%s\" lacks \"%s\"", msg, msg_part);
    json_decref(o);
}

static void test_exact_and_param(void **state)
{
    (void)state;
    http_router *r = make_router();
    http_resp *resp = run(r, "GET", "/users/alice", NULL);
    assert_int_equal(http_resp_status(resp), 200);
    assert_string_equal(g_seen, "param:alice");
    http_resp_free(resp);

    /* The exact route wins over the earlier {name} one. */
    resp = run(r, "GET", "/users/me", NULL);
    assert_string_equal(g_seen, "exact:(none)");
    http_resp_free(resp);

    resp = run(r, "GET", "/users/bob/", NULL); /* trailing slash tolerated */
    assert_string_equal(g_seen, "param:bob");
    http_resp_free(resp);

    resp = run(r, "GET", "/pairs/x/y?q=1", NULL);
    assert_int_equal(http_resp_status(resp), 204);
    assert_string_equal(g_seen, "two:x/y");
    http_resp_free(resp);

    resp = run(r, "PATCH", "/any", NULL); /* "*" matches any method */
    assert_string_equal(g_seen, "any:(none)");
    http_resp_free(resp);

    resp = run(r, "GET", "/", NULL);
    assert_string_equal(g_seen, "root:(none)");
    http_resp_free(resp);

    resp = run(r, "HEAD", "/users/carol", NULL); /* HEAD served by GET */
    assert_string_equal(g_seen, "param:carol");
    http_resp_free(resp);
    http_router_free(r);
}

static void test_param_percent_decoded(void **state)
{
    (void)state;
    http_router *r = make_router();
    http_resp *resp = run(r, "GET", "/users/a%2Fb%20c", NULL);
    assert_int_equal(http_resp_status(resp), 200);
    assert_string_equal(g_seen, "param:a/b c");
    http_resp_free(resp);

    resp = run(r, "GET", "/users/%E3%81%82", NULL);
    assert_string_equal(g_seen, "param:\xe3\x81\x82");
    http_resp_free(resp);

    /* A NUL smuggled in a segment is refused, not truncated. */
    resp = run(r, "GET", "/users/ab%00cd", NULL);
    assert_problem(resp, 400, "invalid-api-params", "NUL");
    assert_string_equal(g_seen, "");
    http_resp_free(resp);
    http_router_free(r);
}

/* What a handler reached under a mount sees. */
static void h_where(http_req *req, http_resp *resp, void *ctx)
{
    (void)ctx;
    snprintf(g_seen, sizeof(g_seen), "%s|%s|%s|%s", req->mount ? req->mount : "-", req->path,
             req->target, http_param(req, "name") ? http_param(req, "name") : "-");
    http_reply(resp, 200, "text/plain", "ok", 2);
}

static void test_mount_prefix(void **state)
{
    (void)state;
    http_router *r = http_router_new();
    http_route(r, "GET", "/users/{name}", h_where, NULL);
    http_route(r, "GET", "/", h_where, NULL);
    http_route(r, "GET", "/func/own", h_where, NULL);
    http_router_mount(r, "/func");

    http_resp *resp = run(r, "GET", "/func/users/a%20b?x=1", NULL);
    assert_int_equal(http_resp_status(resp), 200);
    assert_string_equal(g_seen, "/func|/users/a b|/users/a%20b?x=1|a b");
    http_resp_free(resp);

    resp = run(r, "GET", "/users/bob", NULL); /* directly: no mount */
    assert_string_equal(g_seen, "-|/users/bob|/users/bob|bob");
    http_resp_free(resp);

    resp = run(r, "GET", "/func", NULL); /* the prefix alone is "/" under it */
    assert_string_equal(g_seen, "/func|/|/|-");
    http_resp_free(resp);

    resp = run(r, "GET", "/func/own", NULL); /* a route's own path wins */
    assert_string_equal(g_seen, "-|/func/own|/func/own|-");
    http_resp_free(resp);

    /* Absolute form: the target the route sees is origin-form. */
    resp = run(r, "GET", "http://h:1/func/users/c?y", NULL);
    assert_int_equal(strncmp(g_seen, "/func|/users/c", 14), 0);
    assert_non_null(strstr(g_seen, "|/users/c?y|c"));
    http_resp_free(resp);

    resp = run(r, "DELETE", "/func/users/c", NULL);
    assert_int_equal(http_resp_status(resp), 405);
    http_resp_free(resp);
    resp = run(r, "GET", "/func/func/users/c", NULL); /* one level only */
    assert_problem(resp, 404, "not-found", NULL);
    http_resp_free(resp);
    resp = run(r, "GET", "/other/users/c", NULL);
    assert_problem(resp, 404, "not-found", NULL);
    http_resp_free(resp);
    http_router_free(r);
}

static void test_not_found_problem(void **state)
{
    (void)state;
    http_router *r = make_router();
    const char *targets[] = {"/nope", "/users", "/users/a/b", "/users//", "/pairs/x/", "//", NULL};
    for (int i = 0; targets[i]; i++) {
        http_resp *resp = run(r, "GET", targets[i], NULL);
        assert_problem(resp, 404, "not-found", NULL);
        assert_string_equal(g_seen, "");
        http_resp_free(resp);
    }
    http_resp *resp = run(r, "GET", "/nope/x", NULL);
    assert_problem(resp, 404, "not-found", "/nope/x");
    http_resp_free(resp);
    http_router_free(r);
}

static void test_method_not_allowed(void **state)
{
    (void)state;
    http_router *r = make_router();
    http_resp *resp = run(r, "PUT", "/users/alice", NULL);
    assert_problem(resp, 405, "method-not-allowed", "PUT");
    assert_string_equal(http_resp_header(resp, "Allow"), "GET, DELETE");
    assert_string_equal(g_seen, "");
    http_resp_free(resp);

    resp = run(r, "GET", "/json", NULL);
    assert_problem(resp, 405, "method-not-allowed", NULL);
    assert_string_equal(http_resp_header(resp, "Allow"), "POST");
    http_resp_free(resp);
    http_router_free(r);
}

static void test_no_response_is_500_problem(void **state)
{
    (void)state;
    /* The router leaves the response unset; the server turns that into a 500
     * problem. Here we check the router does not invent a status. */
    http_router *r = make_router();
    http_resp *resp = run(r, "GET", "/nothing", NULL);
    assert_int_equal(http_resp_status(resp), 0);
    http_resp_free(resp);
    http_router_free(r);

    /* An out-of-range status from a handler becomes a 500 problem. */
    resp = http_resp_new();
    http_reply(resp, 42, "text/plain", "x", 1);
    assert_problem(resp, 500, "internal-server-error", "42");
    http_resp_free(resp);
}

static void test_json_body(void **state)
{
    (void)state;
    http_router *r = make_router();
    http_resp *resp = run(r, "POST", "/json", "{\"a\": 1,}");
    assert_string_equal(g_seen, "json:NULL");
    assert_problem(resp, 400, "invalid-api-params", "line 1");
    http_resp_free(resp);

    resp = run(r, "POST", "/json", "[1, 2]");
    assert_string_equal(g_seen, "json:NULL");
    assert_problem(resp, 400, "invalid-api-params", "object");
    http_resp_free(resp);

    resp = run(r, "POST", "/json", "");
    assert_string_equal(g_seen, "json:NULL");
    assert_problem(resp, 400, "invalid-api-params", "empty");
    http_resp_free(resp);

    resp = run(r, "POST", "/json", "{\"a\": [1, \"x\"]}");
    assert_string_equal(g_seen, "json:ok");
    assert_int_equal(http_resp_status(resp), 200);
    assert_string_equal(http_resp_header(resp, "Content-Type"), "application/json");
    assert_string_equal(http_resp_body(resp, NULL), "{\"a\":[1,\"x\"]}");
    http_resp_free(resp);
    http_router_free(r);
}

static void test_headers_and_query_on_local_request(void **state)
{
    (void)state;
    const char *hdrs[] = {"X-Request-ID: abc-123", "Content-Type:  application/json", NULL};
    http_req *req = http_req_new_local("GET", "/p%20q?a=1&b=x%20y+z&c&a=2", hdrs, NULL, 0);
    assert_string_equal(req->path, "/p q");
    assert_string_equal(req->query, "a=1&b=x%20y+z&c&a=2");
    assert_string_equal(req->request_id, "abc-123");
    assert_string_equal(http_header(req, "content-type"), "application/json");
    assert_null(http_header(req, "X-Missing"));
    assert_string_equal(http_query_arg(req, "a"), "1");
    assert_string_equal(http_query_arg(req, "b"), "x y z");
    assert_string_equal(http_query_arg(req, "c"), "");
    assert_null(http_query_arg(req, "d"));
    http_req_free_local(req);

    const char *junk[] = {"X-Request-ID: has spaces", NULL};
    req = http_req_new_local("GET", "/", junk, NULL, 0);
    assert_true(ts_uuid_valid(req->request_id));
    http_req_free_local(req);
}

static void test_resp_headers(void **state)
{
    (void)state;
    http_resp *resp = http_resp_new();
    http_set_header(resp, "X-One", "1");
    http_set_header(resp, "x-one", "2");                  /* replaces */
    http_set_header(resp, "X-Bad", "a\r\nInjected: yes"); /* refused */
    http_set_header(resp, "Content-Type", "text/csv");
    assert_string_equal(http_resp_header(resp, "X-ONE"), "2");
    assert_null(http_resp_header(resp, "X-Bad"));
    assert_string_equal(http_resp_header(resp, "content-type"), "text/csv");
    const char *n, *v;
    assert_true(http_resp_header_at(resp, 0, &n, &v));
    assert_string_equal(n, "X-One");
    assert_false(http_resp_header_at(resp, 1, &n, &v));
    http_resp_free(resp);
}

/* A handler's 500 while a dependency is known to be down is that outage: 503
 * with Retry-After, naming the dependency; once it is back a 500 is a 500. */
static void test_problem_during_outage(void **state)
{
    (void)state;
    http_resp *resp = http_resp_new();
    deps_failed(DEP_POSTGRESQL, "connection refused");
    http_problem(resp, 500, "internal-server-error", NULL, "database error");
    assert_int_equal(http_resp_status(resp), 503);
    assert_string_equal(http_resp_header(resp, "Retry-After"), "5");
    size_t len = 0;
    const char *body = http_resp_body(resp, &len);
    assert_non_null(strstr(body, "service-unavailable"));
    assert_non_null(strstr(body, "database error (postgresql is unavailable)"));
    /* other statuses are left alone */
    http_problem(resp, 404, "not-found", NULL, "no such session");
    assert_int_equal(http_resp_status(resp), 404);
    deps_answered(DEP_POSTGRESQL);
    http_resp_free(resp);
    resp = http_resp_new();
    http_problem(resp, 500, "internal-server-error", NULL, "database error");
    assert_int_equal(http_resp_status(resp), 500);
    assert_null(http_resp_header(resp, "Retry-After"));
    http_resp_free(resp);
}

int main(void)
{
    tlog_init("test", NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_and_param),
        cmocka_unit_test(test_param_percent_decoded),
        cmocka_unit_test(test_mount_prefix),
        cmocka_unit_test(test_not_found_problem),
        cmocka_unit_test(test_method_not_allowed),
        cmocka_unit_test(test_no_response_is_500_problem),
        cmocka_unit_test(test_json_body),
        cmocka_unit_test(test_headers_and_query_on_local_request),
        cmocka_unit_test(test_resp_headers),
        cmocka_unit_test(test_problem_during_outage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
