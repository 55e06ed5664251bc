/* test_tokens.c: services/wsproxy tokens.c, strip.c, routes.c (records,
 * target parsing, the per-thread cache) and the app URL of api.c: the token
 * and cookie logic that decides who reaches which app, what of a request
 * the app never gets, and where a browser's link is redirected. */
#include "services/wsproxy/api.h"
#include "services/wsproxy/routes.h"
#include "services/wsproxy/strip.h"
#include "services/wsproxy/tokens.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_tokens(void **state)
{
    (void)state;
    char a[TOK_LEN + 1], b[TOK_LEN + 1];
    ts_token_new(a);
    ts_token_new(b);
    assert_int_equal(strlen(a), TOK_LEN);
    assert_true(ts_token_syntax_ok(a, strlen(a)));
    assert_string_not_equal(a, b);
    assert_false(ts_token_syntax_ok(a, TOK_LEN - 1));
    char c[TOK_LEN + 1];
    memcpy(c, a, sizeof(c));
    c[5] = '+'; /* standard base64, not url-safe */
    assert_false(ts_token_syntax_ok(c, TOK_LEN));
}

static void test_app_hash(void **state)
{
    (void)state;
    char h1[TOK_HASH_LEN + 1], h2[TOK_HASH_LEN + 1], h3[TOK_HASH_LEN + 1], h4[TOK_HASH_LEN + 1];
    tok_app_hash("u1", "s1", "jupyter", h1);
    tok_app_hash("u1", "s1", "jupyter", h2);
    tok_app_hash("u2", "s1", "jupyter", h3);
    tok_app_hash("u1", "s1j", "upyter", h4); /* the separators matter */
    assert_string_equal(h1, h2);
    assert_string_not_equal(h1, h3);
    assert_string_not_equal(h1, h4);
    assert_true(tok_hash_syntax_ok(h1, strlen(h1)));
    assert_false(tok_hash_syntax_ok("0123456789abcdeF", 16));
}

static void test_query_token(void **state)
{
    (void)state;
    const char *v;
    size_t n;
    const char *t = "/lab?x=1&token=ABC&y=2";
    assert_true(tok_query_token(t, strlen(t), &v, &n));
    assert_int_equal(n, 3);
    assert_memory_equal(v, "ABC", 3);
    assert_false(tok_query_token("/a?xtoken=1", 11, &v, &n));
    assert_false(tok_query_token("/token=1", 8, &v, &n));
    char out[64];
    tok_strip_query_token(t, strlen(t), out, sizeof(out));
    assert_string_equal(out, "/lab?x=1&y=2");
    tok_strip_query_token("/?token=abc", 11, out, sizeof(out));
    assert_string_equal(out, "/");
    tok_strip_query_token("/a?token=abc&b=1", 16, out, sizeof(out));
    assert_string_equal(out, "/a?b=1");
    tok_strip_query_token("/a?b", 4, out, sizeof(out));
    assert_string_equal(out, "/a?b");
    tok_strip_query_token("/a", 2, out, sizeof(out));
    assert_string_equal(out, "/a");
}

static void test_cookies(void **state)
{
    (void)state;
    const char *h = "a=1; tessera_app_0123456789abcdef=TOKEN1; b=\"x\";"
                    "tessera_app_fedcba9876543210=TOKEN2 ; tessera_app_nothex=3";
    tok_cookie ck[4];
    assert_int_equal(tok_cookie_apps(h, strlen(h), ck, 4), 2);
    assert_string_equal(ck[0].hash, "0123456789abcdef");
    assert_int_equal(ck[0].value_len, 6);
    assert_memory_equal(ck[0].value, "TOKEN1", 6);
    assert_string_equal(ck[1].hash, "fedcba9876543210");
    assert_memory_equal(ck[1].value, "TOKEN2", ck[1].value_len);
    char out[256];
    tok_cookie_strip(h, strlen(h), NULL, out, sizeof(out));
    assert_string_equal(out, "a=1; b=\"x\"; tessera_app_nothex=3");
    assert_int_equal(tok_cookie_strip("tessera_app_0123456789abcdef=x", 30, NULL, out, sizeof(out)),
                     0);
    assert_int_equal(tok_cookie_apps("", 0, ck, 4), 0);

    char sc[256];
    tok_set_cookie(sc, sizeof(sc), "0123456789abcdef", "VAL", 3600, false);
    assert_string_equal(
        sc, "tessera_app_0123456789abcdef=VAL; Path=/; Max-Age=3600; HttpOnly; SameSite=Lax");
    tok_set_cookie(sc, sizeof(sc), "0123456789abcdef", NULL, 3600, true);
    assert_string_equal(
        sc, "tessera_app_0123456789abcdef=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax; Secure");
}

static void test_platform_cookies_and_headers(void **state)
{
    (void)state;
    strip_list cookies, headers;
    ts_err err = {{0}};
    assert_true(strip_list_parse(STRIP_DEFAULT_COOKIES, &cookies, &err));
    assert_true(strip_list_parse(STRIP_DEFAULT_HEADERS, &headers, &err));
    char out[512];
    const char *h = "tessera_sid=SID; myapp=1; sToken=SSO; TESSERA_SID=x; "
                    "tessera_app_0123456789abcdef=T; stoken2=y; tessera_=z; other=\"q\"";
    tok_cookie_strip(h, strlen(h), &cookies, out, sizeof(out));
    assert_string_equal(out, "myapp=1; stoken2=y; other=\"q\"");
    assert_int_equal(tok_cookie_strip("tessera_sid=a;sToken=b", 22, &cookies, out, sizeof(out)), 0);

    /* an app's Set-Cookie of a platform cookie */
    assert_true(tok_set_cookie_platform("tessera_sid=x; Domain=example.com", 34, &cookies));
    assert_true(tok_set_cookie_platform(" TESSERA_APP_0123456789abcdef =y", 32, NULL));
    assert_true(tok_set_cookie_platform("sToken=1; Path=/", 16, &cookies));
    assert_false(tok_set_cookie_platform("myapp=1; Path=/", 15, &cookies));
    assert_false(tok_set_cookie_platform("tessera_sid", 11, &cookies)); /* no '=': no cookie */
    assert_false(tok_set_cookie_platform("_xsrf=2|ab; Path=/", 18, &cookies));

#define STRIPPED(name, value) strip_header(&headers, name, strlen(name), value, strlen(value))
    assert_true(STRIPPED("Authorization", "Bearer app-key"));
    assert_true(STRIPPED("proxy-authorization", "Basic eDp5"));
    assert_true(STRIPPED("X-BackendAI-Version", "v8"));
    assert_true(STRIPPED("x-backendai-date", "now"));
    assert_true(STRIPPED("X-Tessera-Service-Auth", "v1 ..."));
    assert_false(STRIPPED("X-BackendAIx", "1")); /* not the prefix "x-backendai-" */
    assert_false(STRIPPED("Accept", "*/*"));
    assert_false(STRIPPED("X-Forwarded-Host", "a"));
    /* with Authorization off the list, only the platform's scheme goes */
    assert_true(strip_list_parse("X-Tessera-*", &headers, &err));
    assert_false(STRIPPED("Authorization", "Bearer app-key"));
    assert_true(STRIPPED("Authorization", "BackendAI signMethod=HMAC-SHA256, credential=a:b"));
    assert_true(STRIPPED("authorization", "  backendai x"));
    assert_false(STRIPPED("Authorization", "BackendAIx y"));
    assert_true(STRIPPED("Proxy-Authorization", "BackendAI"));
#undef STRIPPED

    assert_true(strip_list_parse(" a , b* ,,", &headers, &err));
    assert_int_equal(headers.n, 2);
    assert_true(strip_list_has(&headers, "B-anything", 10));
    assert_true(strip_list_has(&headers, "b", 1));
    assert_false(strip_list_has(&headers, "ab", 2));
    assert_true(strip_list_parse("", &headers, &err) && headers.n == 0);
    assert_false(strip_list_parse("bad name", &headers, &err));
    assert_non_null(strstr(err.msg, "bad name"));
    assert_false(strip_list_parse("a*b", &headers, &err));
    assert_false(strip_list_parse("*", &headers, &err));
    assert_false(strip_list_parse("a=b", &headers, &err));
    char many[STRIP_MAX_NAMES * 4 + 8] = "";
    for (int i = 0; i <= STRIP_MAX_NAMES; i++)
        sprintf(many + strlen(many), "n%d,", i);
    assert_false(strip_list_parse(many, &headers, &err));
}

static void test_redirect_location(void **state)
{
    (void)state;
    static const struct {
        const char *target, *want;
    } cases[] = {
        {"/?token=T", "/"},
        {"/lab/tree?a=1&token=T&b=2", "/lab/tree?a=1&b=2"},
        {"//evil.example/?token=T", "/evil.example/"},
        {"//evil.example/a?b=c&token=T", "/evil.example/a?b=c"},
        {"/\\evil.example/?token=T", "/evil.example/"},
        {"/\\/\\//evil.example?token=T", "/evil.example"},
        {"///evil.example/?token=T", "/evil.example/"},
        {"/%2F%2Fevil.example/?token=T", "/%2F%2Fevil.example/"},
        {"/a\\b?token=T", "/a%5Cb"},
        {"/./\\evil.example/?token=T", "/./%5Cevil.example/"},
        {"/https://evil.example/?token=T", "/https://evil.example/"},
        {"/\x01x\x7f\xc3\xa9?token=T", "/%01x%7F%C3%A9"},
        {"?token=T", "/"},
    };
    char out[256];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n =
            tok_redirect_location(cases[i].target, strlen(cases[i].target), out, sizeof(out));
        assert_int_equal(n, strlen(cases[i].want));
        assert_string_equal(out, cases[i].want);
    }
    /* too long for out: "/" */
    assert_int_equal(tok_redirect_location("/abcdefghij", 11, out, 8), 1);
    assert_string_equal(out, "/");
    assert_int_equal(tok_redirect_location("/a", 2, out, 1), 0);
}

static void test_host_hash(void **state)
{
    (void)state;
    char h[TOK_HASH_LEN + 1];
    assert_true(tok_host_hash("0123456789ABCDEF.apps.example.com:8443", 38, h));
    assert_string_equal(h, "0123456789abcdef");
    assert_false(tok_host_hash("apps.example.com", 16, h));
    assert_false(tok_host_hash("0123456789abcdef", 16, h));
    assert_false(tok_host_hash("0123456789abcdeg.x", 18, h));
}

static void test_route_records(void **state)
{
    (void)state;
    route r = {0};
    strcpy(r.user_id, "11111111-2222-3333-4444-555555555555");
    strcpy(r.session_id, "sess-1");
    strcpy(r.app, "jupyter");
    r.proto = ROUTE_PREOPEN;
    strcpy(r.host, "10.0.0.7");
    r.port = 30001;
    r.expires_at_ms = 1234567890123;
    r.is_cookie = true;
    char *j = route_to_json(&r);
    route back;
    ts_err err;
    assert_true(route_from_json(j, strlen(j), &back, &err));
    free(j);
    assert_string_equal(back.user_id, r.user_id);
    assert_string_equal(back.session_id, r.session_id);
    assert_string_equal(back.app, r.app);
    assert_int_equal(back.proto, ROUTE_PREOPEN);
    assert_string_equal(back.host, "10.0.0.7");
    assert_int_equal(back.port, 30001);
    assert_int_equal(back.expires_at_ms, 1234567890123);
    assert_true(back.is_cookie);
    char h[TOK_HASH_LEN + 1];
    tok_app_hash(r.user_id, r.session_id, r.app, h);
    assert_string_equal(back.hash, h);
    assert_false(route_from_json("[]", 2, &back, &err));
    assert_false(route_from_json("{\"user_id\":\"u\"}", 15, &back, &err));

    char host[ROUTE_HOST_MAX + 1];
    int port;
    assert_true(route_target_parse("127.0.0.1:8080", host, &port, &err));
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 8080);
    assert_true(route_target_parse("[::1]:22", host, &port, &err));
    assert_string_equal(host, "::1");
    assert_true(route_target_parse("agent-3.cluster:30000", host, &port, &err));
    assert_false(route_target_parse("::1:22", host, &port, &err));
    assert_false(route_target_parse("host:0", host, &port, &err));
    assert_false(route_target_parse("host:65536", host, &port, &err));
    assert_false(route_target_parse("host", host, &port, &err));
    assert_false(route_target_parse("ho st:1", host, &port, &err));
    assert_false(route_target_parse(":80", host, &port, &err));

    assert_true(route_id_ok("a1b2-c3:d4.e5_f"));
    assert_false(route_id_ok(""));
    assert_false(route_id_ok("a/b"));
    assert_false(route_app_ok("a:b"));
    route_proto p;
    assert_true(route_proto_parse("tcp", &p) && p == ROUTE_TCP);
    assert_false(route_proto_parse("udp", &p));
}

static void test_cache(void **state)
{
    (void)state;
    route_cache *c = route_cache_new(64, 1000);
    route r = {0}, out;
    bool found, alive;
    strcpy(r.session_id, "s1");
    r.expires_at_ms = ts_now_wall_ms() + 60000;
    const char *k = "KKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKK";
    assert_false(route_cache_get(c, k, 1000, &out, &found));
    route_cache_put(c, k, &r, 1000);
    assert_true(route_cache_get(c, k, 1500, &out, &found) && found);
    assert_string_equal(out.session_id, "s1");
    assert_false(route_cache_get(c, k, 2000, &out, &found)); /* at most the TTL */
    route_cache_put(c, k, NULL, 3000);
    assert_true(route_cache_get(c, k, 3001, &out, &found) && !found);
    /* an expired route is not served from the cache */
    r.expires_at_ms = ts_now_wall_ms() - 1;
    route_cache_put(c, k, &r, 4000);
    assert_true(route_cache_get(c, k, 4001, &out, &found) && !found);
    /* sessions */
    assert_false(route_cache_session(c, "s1", 5000, &alive));
    route_cache_put_session(c, "s1", true, 5000);
    assert_true(route_cache_session(c, "s1", 5100, &alive) && alive);
    r.expires_at_ms = ts_now_wall_ms() + 60000;
    route_cache_put(c, k, &r, 5000);
    route_cache_drop_session(c, "s1");
    assert_false(route_cache_get(c, k, 5001, &out, &found));
    assert_true(route_cache_session(c, "s1", ts_now_mono_ms(), &alive) && !alive);
    route_cache_free(c);
}

static void test_app_url(void **state)
{
    (void)state;
    char *u = api_app_url("http://127.0.0.1:8097", "0123456789abcdef", ROUTE_HTTP, "T");
    assert_string_equal(u, "http://127.0.0.1:8097/?token=T");
    free(u);
    u = api_app_url("https://*.apps.example.com/", "0123456789abcdef", ROUTE_PREOPEN, "T");
    assert_string_equal(u, "https://0123456789abcdef.apps.example.com/?token=T");
    free(u);
    u = api_app_url("https://*.apps.example.com:8443", "0123456789abcdef", ROUTE_TCP, "T");
    assert_string_equal(u, "https://0123456789abcdef.apps.example.com:8443/v1/tcp?token=T");
    free(u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokens),
        cmocka_unit_test(test_app_hash),
        cmocka_unit_test(test_query_token),
        cmocka_unit_test(test_cookies),
        cmocka_unit_test(test_platform_cookies_and_headers),
        cmocka_unit_test(test_redirect_location),
        cmocka_unit_test(test_host_hash),
        cmocka_unit_test(test_route_records),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_app_url),
    };
    return cmocka_run_group_tests_name("wsproxy_tokens", tests, NULL, NULL);
}
