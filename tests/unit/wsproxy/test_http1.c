/* test_http1.c: libcommon/http1.c: request and response heads,
 * the request smuggling defenses, and the chunked decoder. */
#include "libcommon/http1.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>

#include <stdio.h>
#include <string.h>

static bool req(const char *text, h1_msg *m)
{
    size_t len = strlen(text);
    size_t end = h1_head_end(text, len, 0);
    if (end == 0) fail_msg("no head end in: %s", text);
    return h1_parse_request(text, end, m);
}

static void bad_req(const char *text, int status, const char *reason)
{
    h1_msg m;
    if (req(text, &m)) fail_msg("accepted: %s", text);
    assert_int_equal(m.err_status, status);
    if (reason && !strstr(m.err_reason, reason))
        fail_msg("reason '%s', want '%s' for: %s", m.err_reason, reason, text);
}

static void test_head_end(void **state)
{
    (void)state;
    const char *t = "GET / HTTP/1.1\r\nHost: a\r\n\r\nBODY";
    assert_int_equal(h1_head_end(t, strlen(t), 0), strlen(t) - 4);
    assert_int_equal(h1_head_end(t, 10, 0), 0);
    /* resumable from where the last search stopped */
    assert_int_equal(h1_head_end(t, strlen(t), 25), strlen(t) - 4);
    assert_int_equal(h1_head_end("\r\n\r", 3, 0), 0);
}

/* Responses may end lines in a bare LF (busybox httpd's CGI does); they are
 * found, made CRLF and then parsed strictly. Requests stay strict. */
static void test_response_bare_lf(void **state)
{
    (void)state;
    bool lf;
    const char *crlf = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    assert_int_equal(h1_response_head_end(crlf, strlen(crlf), &lf), strlen(crlf) - 2);
    assert_false(lf);
    const char *mixed = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\n\n300\r\n\r\n";
    size_t end = h1_response_head_end(mixed, strlen(mixed), &lf);
    assert_int_equal(end, strlen("HTTP/1.1 200 OK\r\nContent-Type: text/plain\n\n"));
    assert_true(lf);
    size_t n;
    char *c = h1_head_crlf(mixed, end, &n);
    assert_string_equal(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n");
    assert_int_equal(n, strlen(c));
    h1_msg m;
    assert_true(h1_parse_response(c, n, false, &m));
    assert_int_equal(m.status, 200);
    assert_int_equal(m.body, H1_BODY_UNTIL_CLOSE);
    free(c);
    const char *lf_only = "HTTP/1.0 404 Not Found\nContent-Length: 0\n\n";
    end = h1_response_head_end(lf_only, strlen(lf_only), &lf);
    assert_int_equal(end, strlen(lf_only));
    c = h1_head_crlf(lf_only, end, &n);
    assert_true(h1_parse_response(c, n, false, &m));
    assert_int_equal(m.status, 404);
    free(c);
    /* not complete yet */
    assert_int_equal(h1_response_head_end("HTTP/1.1 200 OK\n", 16, &lf), 0);
    assert_int_equal(h1_response_head_end("HTTP/1.1 200 OK\r\n\r", 19, &lf), 0);
    assert_int_equal(h1_response_head_end("", 0, &lf), 0);
    /* a bare CR stays refused after the rewrite */
    const char *cr = "HTTP/1.1 200 OK\rX: y\n\n";
    end = h1_response_head_end(cr, strlen(cr), &lf);
    c = h1_head_crlf(cr, end, &n);
    assert_false(h1_parse_response(c, n, false, &m));
    free(c);
}

static void test_simple_request(void **state)
{
    (void)state;
    h1_msg m;
    assert_true(req("GET /a/b?x=1 HTTP/1.1\r\nHost: example.com:80\r\nX-Y:  z  \r\n\r\n", &m));
    assert_int_equal(m.method_len, 3);
    assert_memory_equal(m.target, "/a/b?x=1", 8);
    assert_int_equal(m.minor, 1);
    assert_true(m.keep_alive);
    assert_int_equal(m.body, H1_BODY_NONE);
    assert_int_equal(m.n_headers, 2);
    const h1_header *h = h1_find(&m, "x-y");
    assert_non_null(h);
    assert_int_equal(h->value_len, 1);
    assert_memory_equal(h->value, "z", 1);
    assert_memory_equal(m.host, "example.com:80", m.host_len);

    assert_true(
        req("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\nConnection: close\r\n\r\n", &m));
    assert_int_equal(m.body, H1_BODY_LENGTH);
    assert_int_equal(m.content_length, 12);
    assert_false(m.keep_alive);

    assert_true(req("GET / HTTP/1.0\r\n\r\n", &m));
    assert_false(m.keep_alive);
    assert_true(req("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &m));
    assert_true(m.keep_alive);

    assert_true(req(
        "PUT /up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n",
        &m));
    assert_int_equal(m.body, H1_BODY_CHUNKED);
    assert_true(m.expect_continue);
}

static void test_upgrade(void **state)
{
    (void)state;
    h1_msg m;
    assert_true(req("GET /ws HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade\r\n"
                    "Upgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
                    &m));
    assert_non_null(m.upgrade);
    assert_true(h1_span_eq(m.upgrade, m.upgrade_len, "WebSocket"));
    /* Upgrade without Connection: upgrade is not an upgrade */
    assert_true(req("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\n", &m));
    assert_null(m.upgrade);
}

static void test_smuggling(void **state)
{
    (void)state;
    bad_req("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
            400, "both");
    bad_req("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
            400, "both");
    bad_req("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 400,
            "repeated");
    bad_req("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400,
            "repeated");
    bad_req("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n", 400, "Content-Length");
    bad_req("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400, "Content-Length");
    bad_req("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n", 400, "Content-Length");
    bad_req("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", 400,
            "Content-Length");
    bad_req("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n", 400, "Content-Length");
    bad_req("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501, NULL);
    bad_req("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n", 501, NULL);
    bad_req("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
            "chunked\r\n\r\n",
            400, "repeated");
    bad_req("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "HTTP/1.0");
    /* whitespace before the colon: "Transfer-Encoding : chunked" */
    bad_req("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n", 400, "name");
    /* obs-fold */
    bad_req("GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", 400, "folding");
    /* bare LF and CR */
    bad_req("GET / HTTP/1.1\r\nHost: a\nX: y\r\n\r\n", 400, NULL);
    bad_req("GET / HTTP/1.1\r\nHost: a\rX: y\r\n\r\n", 400, NULL);
    /* NUL and controls in values */
    {
        char t[] = "GET / HTTP/1.1\r\nHost: a\r\nX: a?b\r\n\r\n";
        *strchr(t, '?') = '\0';
        h1_msg m;
        assert_false(h1_parse_request(t, sizeof(t) - 1, &m));
        assert_int_equal(m.err_status, 400);
    }
    bad_req("GET / HTTP/1.1\r\nHost: a\r\nX: a\x01"
            "b\r\n\r\n",
            400, "control");
    bad_req("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "Host");
    bad_req("GET / HTTP/1.1\r\n\r\n", 400, "Host");
    bad_req("GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505, NULL);
    bad_req("GET / HTTP/1.2\r\nHost: a\r\n\r\n", 505, NULL);
    bad_req("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400, NULL);
    bad_req("GET / x HTTP/1.1\r\nHost: a\r\n\r\n", 400, NULL);
    bad_req("GET http://evil/ HTTP/1.1\r\nHost: a\r\n\r\n", 400, "absolute");
    bad_req("G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "method");
    bad_req("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\nConnection: keep-alive\r\n\r\n", 400,
            "Connection");
}

static void test_too_many_headers(void **state)
{
    (void)state;
    char big[8192];
    size_t o = (size_t)snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nHost: a\r\n");
    for (int i = 0; i < H1_MAX_HEADERS + 1; i++)
        o += (size_t)snprintf(big + o, sizeof(big) - o, "X-%d: 1\r\n", i);
    snprintf(big + o, sizeof(big) - o, "\r\n");
    bad_req(big, 431, NULL);
}

static bool resp(const char *text, bool head, h1_msg *m)
{
    size_t end = h1_head_end(text, strlen(text), 0);
    assert_true(end > 0);
    return h1_parse_response(text, end, head, m);
}

static void test_responses(void **state)
{
    (void)state;
    h1_msg m;
    assert_true(resp("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", false, &m));
    assert_int_equal(m.status, 200);
    assert_int_equal(m.body, H1_BODY_LENGTH);
    assert_true(m.keep_alive);
    assert_true(resp("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", true, &m));
    assert_int_equal(m.body, H1_BODY_NONE);
    assert_true(m.keep_alive);
    assert_true(resp("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", false, &m));
    assert_int_equal(m.body, H1_BODY_CHUNKED);
    assert_true(resp("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", false, &m));
    assert_int_equal(m.body, H1_BODY_UNTIL_CLOSE);
    assert_false(m.keep_alive);
    assert_true(resp("HTTP/1.0 200 OK\r\n\r\n", false, &m));
    assert_int_equal(m.body, H1_BODY_UNTIL_CLOSE);
    assert_true(resp("HTTP/1.1 204 No Content\r\n\r\n", false, &m));
    assert_int_equal(m.body, H1_BODY_NONE);
    assert_true(m.keep_alive);
    assert_true(resp("HTTP/1.1 304 Not Modified\r\nConnection: close\r\n\r\n", false, &m));
    assert_false(m.keep_alive);
    assert_true(resp(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        false, &m));
    assert_int_equal(m.status, 101);
    assert_int_equal(m.body, H1_BODY_NONE);
    assert_true(resp("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", false, &m));
    assert_int_equal(m.body, H1_BODY_NONE);
    assert_false(resp("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
                      false, &m));
    assert_int_equal(m.err_status, 502);
    assert_false(resp("HTTP/1.1 2x0 OK\r\n\r\n", false, &m));
    assert_false(resp("ICY 200 OK\r\n\r\n", false, &m));
}

struct collect {
    char out[256];
    size_t n;
};

static void on_data(void *ctx, const char *p, size_t n)
{
    struct collect *c = ctx;
    memcpy(c->out + c->n, p, n);
    c->n += n;
}

/* Feed the body byte by byte and whole: the same result. */
static int chunked(const char *body, size_t len, size_t *consumed, struct collect *col,
                   bool bytewise)
{
    h1_chunked c;
    h1_chunked_init(&c);
    memset(col, 0, sizeof(*col));
    if (!bytewise) return h1_chunked_feed(&c, body, len, consumed, on_data, col);
    *consumed = 0;
    for (size_t i = 0; i < len; i++) {
        size_t used = 0;
        int r = h1_chunked_feed(&c, body + i, 1, &used, on_data, col);
        *consumed += used;
        if (r != H1C_MORE) return r;
    }
    return H1C_MORE;
}

static void test_chunked(void **state)
{
    (void)state;
    static const char good[] = "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\nNEXT";
    for (int bw = 0; bw < 2; bw++) {
        struct collect col;
        size_t used;
        assert_int_equal(chunked(good, sizeof(good) - 1, &used, &col, bw), H1C_DONE);
        assert_int_equal(used, sizeof(good) - 1 - 4);
        assert_int_equal(col.n, 11);
        assert_memory_equal(col.out, "hello world", 11);
    }
    struct collect col;
    size_t used;
    assert_int_equal(chunked("A\r\n0123456789\r\n0\r\n\r\n", 20, &used, &col, false), H1C_DONE);
    assert_int_equal(chunked("5\r\nhel", 6, &used, &col, false), H1C_MORE);
    assert_int_equal(used, 6);
    assert_int_equal(chunked("5 ;x\r\nhello\r\n0\r\n\r\n", 19, &used, &col, false), H1C_DONE);
    /* malformed */
    const char *bad[] = {
        "x\r\n",                 /* not hex */
        "\r\n",                  /* no digits */
        "-1\r\n",                /* sign */
        "1000000000000000\r\n",  /* 16 digits: too large */
        "5\nhello\r\n",          /* bare LF */
        "5\r\nhelloX\r\n",       /* data longer than announced */
        "5\r\nhello\n0\r\n\r\n", /* bare LF after data */
        "0\r\nX: y\n\r\n",       /* bare LF in trailers */
        "0\r\n : y\r\n\r\n",     /* trailer starting with whitespace */
        "5 x\r\n",               /* junk after size */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        for (int bw = 0; bw < 2; bw++) {
            int r = chunked(bad[i], strlen(bad[i]), &used, &col, bw);
            if (r != H1C_ERROR) fail_msg("accepted chunked body #%zu (bytewise %d)", i, bw);
        }
    }
}

static void test_early_garbage(void **state)
{
    (void)state;
    const char *fine[] = {"",
                          "G",
                          "GET",
                          "GET ",
                          "GET /a",
                          "GET /a ",
                          "GET /a HTTP/1.",
                          "GET /a HTTP/1.1\r",
                          "GET /a HTTP/1.1\r\nHost: x"};
    for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++)
        if (h1_request_start_bad(fine[i], strlen(fine[i])))
            fail_msg("refused early: '%s'", fine[i]);
    const char *bad[] = {"\x16\x03\x01",      " GET",        "GET  /",
                         "GET /a\x01",        "GET /a XTTP", "GET /a HTTP/x",
                         "GET /a HTTP/1.1\n", "\r\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (!h1_request_start_bad(bad[i], strlen(bad[i]))) fail_msg("not refused early: #%zu", i);
}

static void test_lists(void **state)
{
    (void)state;
    assert_true(h1_list_has("keep-alive, Upgrade", 19, "upgrade"));
    assert_false(h1_list_has("keep-alive, Upgraded", 20, "upgrade"));
    assert_true(h1_list_has(" close ", 7, "close"));
    assert_false(h1_list_has("", 0, "close"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_head_end),         cmocka_unit_test(test_simple_request),
        cmocka_unit_test(test_upgrade),          cmocka_unit_test(test_smuggling),
        cmocka_unit_test(test_too_many_headers), cmocka_unit_test(test_responses),
        cmocka_unit_test(test_chunked),          cmocka_unit_test(test_lists),
        cmocka_unit_test(test_early_garbage),    cmocka_unit_test(test_response_bare_lf),
    };
    return cmocka_run_group_tests_name("wsproxy_http1", tests, NULL, NULL);
}
