/* test_http_front.c: http_front_check, the judgement of a connection's first
 * request head (the thread around it is tested in test_http_server.c), and
 * the raw problem answer. */
#include "libcommon/http_front.h"

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const http_front_limits k_lim = {.max_line = 64, .max_head = 256};

static http_front_result judge(const char *s, http_front_verdict *v)
{
    return http_front_check(s, strlen(s), &k_lim, v);
}

static void expect(const char *s, http_front_result want, int status)
{
    http_front_verdict v;
    http_front_result got = judge(s, &v);
    if (got != want || (want == HTTP_FRONT_BAD && v.status != status))
        fail_msg("'%s': got %d/%d, want %d/%d", s, got, v.status, want, status);
}

static void test_ok_and_more(void **state)
{
    (void)state;
    http_front_verdict v;
    const char *req = "GET /x?y=1 HTTP/1.1\r\nHost: h\r\n\r\nBODY";
    assert_int_equal(judge(req, &v), HTTP_FRONT_OK);
    assert_int_equal(v.head_len, strlen(req) - 4);
    expect("GET / HTTP/1.0\r\n\r\n", HTTP_FRONT_OK, 0);
    expect("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", HTTP_FRONT_OK, 0);
    expect("POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", HTTP_FRONT_OK, 0);
    /* every prefix of a good head wants more */
    const char *good = "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\n";
    for (size_t n = 0; n < strlen(good); n++) {
        http_front_result r = http_front_check(good, n, &k_lim, &v);
        if (r != HTTP_FRONT_MORE) fail_msg("prefix %zu: %d (%s)", n, r, v.reason);
    }
}

static void test_bad(void **state)
{
    (void)state;
    expect("GARBAGE\r\n\r\n", HTTP_FRONT_BAD, 400);
    expect("\x16\x03\x01", HTTP_FRONT_BAD, 400);
    expect("GET", HTTP_FRONT_MORE, 0);
    expect("GET /\r\n", HTTP_FRONT_BAD, 400);
    expect("GET / HTTP/1.1\n", HTTP_FRONT_BAD, 400);
    expect("GET / HTTP/1.1\r\nHost: h\n\r\n", HTTP_FRONT_BAD, 400);
    expect("GET / HTTP/1.1\r\n\r\n", HTTP_FRONT_BAD, 400); /* no Host */
    expect("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", HTTP_FRONT_BAD, 400);
    expect("GET / HTTP/1.1\r\nHost: h\r\nX : y\r\n\r\n", HTTP_FRONT_BAD, 400);
    expect("GET / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n", HTTP_FRONT_BAD, 400);
    expect("GET / HTTP/1.1\r\nHost: h\x01\r\n\r\n", HTTP_FRONT_BAD, 400);
    expect("GET / HTTP/3.0\r\nHost: h\r\n\r\n", HTTP_FRONT_BAD, 505);
    expect("GET http://x/ HTTP/1.1\r\nHost: h\r\n\r\n", HTTP_FRONT_BAD, 400);
    expect("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: x\r\n\r\n", HTTP_FRONT_BAD, 400);
    expect("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
           HTTP_FRONT_BAD, 400);
    expect("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
           HTTP_FRONT_BAD, 400);
    expect("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", HTTP_FRONT_BAD, 501);
}

static void test_sizes(void **state)
{
    (void)state;
    char line[200];
    snprintf(line, sizeof(line), "GET /%0100d", 0); /* no end yet, over max_line */
    expect(line, HTTP_FRONT_BAD, 414);
    snprintf(line, sizeof(line), "GET /%060d HTTP/1.1\r\n", 0);
    expect(line, HTTP_FRONT_BAD, 414);
    char head[400];
    snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nHost: h\r\nX: %0250d", 0);
    expect(head, HTTP_FRONT_BAD, 431);
    snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nHost: h\r\nX: %0250d\r\n\r\n", 0);
    expect(head, HTTP_FRONT_BAD, 431);
}

static void test_problem_response(void **state)
{
    (void)state;
    size_t len;
    char *r =
        http_front_problem_response(431, "request head too large", "rid-1", "tessera-x", &len);
    assert_int_equal(strlen(r), len);
    assert_memory_equal(r, "HTTP/1.1 431 Request Header Fields Too Large\r\n", 46);
    assert_non_null(strstr(r, "\r\nContent-Type: application/problem+json\r\n"));
    assert_non_null(strstr(r, "\r\nX-Request-ID: rid-1\r\n"));
    assert_non_null(strstr(r, "\r\nConnection: close\r\n"));
    const char *body = strstr(r, "\r\n\r\n") + 4;
    char cl[64];
    snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n", strlen(body));
    assert_non_null(strstr(r, cl));
    json_t *o = json_loads(body, 0, NULL);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "type")),
                        "https://api.backend.ai/probs/header-fields-too-large");
    assert_string_equal(json_string_value(json_object_get(o, "msg")), "request head too large");
    json_decref(o);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ok_and_more),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_problem_response),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
