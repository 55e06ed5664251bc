/* Unit tests: Backend.AI signatures. Expected values come from the tests'
 * independent Python signer (tests/integration/bai_signer.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "libcommon/sign.h"

#include <ctype.h>
#include <string.h>

#define SECRET "SECRETSECRETSECRETSECRETSECRETSECRET1234"
#define DATE_T ((time_t)1795304401) /* 2026-11-21T23:40:01Z */

/* The first vector: a GET with a query and a Content-Type with parameters. */
static const sign_input vector_a = {.method = "GET",
                                    .target = "/auth/test?echo=a%20b",
                                    .raw_date = "2026-11-21T23:40:01+00:00",
                                    .date = DATE_T,
                                    .host = "127.0.0.1:8090",
                                    .content_type = "application/json; charset=utf-8",
                                    .version = "v8.20240915"};

static void test_vectors(void **state)
{
    (void)state;
    char out[SIGN_HEX_LEN + 1];
    sign_input a = vector_a;
    sign_compute(SECRET, &a, out);
    assert_string_equal(out, "9f7913503fc1a938c8d1295320693e802a56f29ca9b40895cde012bf1131900d");
    /* multipart: the boundary is not signed; new versions sign no body */
    sign_input b = {.method = "POST",
                    .target = "/folders",
                    .raw_date = "2026-11-21T23:40:01+00:00",
                    .date = DATE_T,
                    .host = "gw.example:443",
                    .content_type = "multipart/form-data; boundary=xyz",
                    .version = "v8.20240915",
                    .body = "ignored",
                    .body_len = 7};
    sign_compute(SECRET, &b, out);
    assert_string_equal(out, "e86565c081f460469a5a4644ee94dace76ac7789935776c5ec2f7dd8bbf6f539");
    /* old versions hash the body; no Content-Type means application/json */
    const char *body = "{\"lang\":\"python\"}";
    sign_input c = {.method = "POST",
                    .target = "/kernel",
                    .raw_date = "2026-11-21T23:40:01+00:00",
                    .date = DATE_T,
                    .host = "h:1",
                    .content_type = NULL,
                    .version = "v3.20170615",
                    .body = body,
                    .body_len = strlen(body)};
    sign_compute(SECRET, &c, out);
    assert_string_equal(out, "2814d2d5ff45db2947d03e974b023e4ebc2b93773cc043590301dc8370fe0a6e");
    /* any change changes the signature */
    a.target = "/auth/test?echo=a%20c";
    sign_compute(SECRET, &a, out);
    assert_string_not_equal(out,
                            "9f7913503fc1a938c8d1295320693e802a56f29ca9b40895cde012bf1131900d");
}

static void test_parse_authorization(void **state)
{
    (void)state;
    char ak[SIGN_ACCESS_KEY_LEN + 1], sig[SIGN_HEX_LEN + 1];
    ts_err e = {{0}};
    const char *good = "BackendAI signMethod=HMAC-SHA256, credential=AKIAIOSFODNN7EXAMPLE:"
                       "9F7913503FC1A938C8D1295320693E802A56F29CA9B40895CDE012BF1131900D";
    assert_true(sign_parse_authorization(good, ak, sig, &e));
    assert_string_equal(ak, "AKIAIOSFODNN7EXAMPLE");
    assert_string_equal(sig, "9f7913503fc1a938c8d1295320693e802a56f29ca9b40895cde012bf1131900d");
    const char *bad[] = {
        NULL,
        "",
        "Bearer abc",
        "BackendAI",
        "BackendAI signMethod=HMAC-SHA256",
        "BackendAI credential=AKIAIOSFODNN7EXAMPLE:00",
        "BackendAI signMethod=HMAC-MD5, credential=AKIAIOSFODNN7EXAMPLE:"
        "9f7913503fc1a938c8d1295320693e802a56f29ca9b40895cde012bf1131900d",
        "BackendAI signMethod=HMAC-SHA256, credential=akiaiosfodnn7example:"
        "9f7913503fc1a938c8d1295320693e802a56f29ca9b40895cde012bf1131900d",
        "BackendAI signMethod=HMAC-SHA256, credential=AKIAIOSFODNN7EXAMPLE"
        "9f7913503fc1a938c8d1295320693e802a56f29ca9b40895cde012bf1131900d",
        "BackendAI signMethod=HMAC-SHA256, credential=AKIAIOSFODNN7EXAMPLE:zz",
        "BackendAI signMethod=HMAC-SHA256, credential=AKIAIOSFODNN7EXAMPLE:"
        "9f7913503fc1a938c8d1295320693e802a56f29ca9b40895cde012bf1131900g",
        "BackendAI ====,,,,",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        e.msg[0] = '\0';
        assert_false(sign_parse_authorization(bad[i], ak, sig, &e));
        assert_true(strlen(e.msg) > 0);
    }
}

static void test_parse_date(void **state)
{
    (void)state;
    time_t t;
    assert_true(sign_parse_date("2026-11-21T23:40:01+00:00", &t));
    assert_int_equal(t, DATE_T);
    assert_true(sign_parse_date("2026-11-21T23:40:01.123456Z", &t));
    assert_int_equal(t, DATE_T);
    assert_true(sign_parse_date("2026-11-22T08:40:01+09:00", &t));
    assert_int_equal(t, DATE_T);
    assert_true(sign_parse_date("2026-11-21T18:40:01-0500", &t));
    assert_int_equal(t, DATE_T);
    assert_true(sign_parse_date("2026-11-21T23:40:01", &t)); /* no zone: UTC */
    assert_int_equal(t, DATE_T);
    assert_true(sign_parse_date("Sat, 21 Nov 2026 23:40:01 GMT", &t));
    assert_int_equal(t, DATE_T);
    const char *bad[] = {NULL,
                         "",
                         "yesterday",
                         "2026-13-01T00:00:00Z",
                         "2026-11-21T23:40:01+25:00",
                         "2026-11-21T23:40:01 junk",
                         "2026-11-21T23:40:01.Z",
                         "Sat, 21 Nov 2026 23:40:01 PST"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(sign_parse_date(bad[i], &t));
}

static void test_media_type_and_equal(void **state)
{
    (void)state;
    char m[64];
    sign_media_type("Application/JSON ; charset=UTF-8", m, sizeof(m));
    assert_string_equal(m, "application/json");
    sign_media_type(NULL, m, sizeof(m));
    assert_string_equal(m, "application/json");
    sign_media_type("multipart/form-data; boundary=----x", m, sizeof(m));
    assert_string_equal(m, "multipart/form-data");
    assert_true(sign_equal("abc", "abc"));
    assert_false(sign_equal("abc", "abd"));
    assert_false(sign_equal("abc", "abcd"));
}

static void test_new_keypair(void **state)
{
    (void)state;
    char ak[SIGN_ACCESS_KEY_LEN + 1], sk[SIGN_SECRET_KEY_LEN + 1], ak2[SIGN_ACCESS_KEY_LEN + 1];
    sign_new_keypair(ak, sk);
    sign_new_keypair(ak2, sk);
    assert_int_equal(strlen(ak), 20);
    assert_int_equal(strlen(sk), 40);
    assert_string_not_equal(ak, ak2);
    for (int i = 0; i < 20; i++)
        assert_true(isupper((unsigned char)ak[i]) || isdigit((unsigned char)ak[i]));
    for (int i = 0; i < 40; i++)
        assert_true(isalnum((unsigned char)sk[i]));
}

/* The derived key (what the gateway caches) gives sign_compute's signature;
 * it depends on the secret, the UTC day and the host, not on the time of day. */
static void test_keyed(void **state)
{
    (void)state;
    sign_input a = vector_a;
    char direct[SIGN_HEX_LEN + 1], keyed[SIGN_HEX_LEN + 1];
    sign_key k;
    sign_key_derive(SECRET, DATE_T - 3600 * 23, "127.0.0.1:8090", &k); /* same day, 00:40 */
    sign_compute_keyed(&k, &a, keyed);
    assert_string_equal(keyed, "9f7913503fc1a938c8d1295320693e802a56f29ca9b40895cde012bf1131900d");
    sign_compute_keyed(&k, &a, keyed); /* the key is not used up */
    assert_string_equal(keyed, "9f7913503fc1a938c8d1295320693e802a56f29ca9b40895cde012bf1131900d");
    sign_compute(SECRET, &a, direct);
    assert_string_equal(direct, keyed);
    sign_key_derive(SECRET, DATE_T + 3600, "127.0.0.1:8090", &k); /* the next day */
    sign_compute_keyed(&k, &a, keyed);
    assert_string_not_equal(direct, keyed);
    sign_key_derive(SECRET, DATE_T, "127.0.0.1:8091", &k); /* another host */
    sign_compute_keyed(&k, &a, keyed);
    assert_string_not_equal(direct, keyed);
    sign_key_wipe(&k);
    assert_int_equal(sign_day(DATE_T), 20261121);
    assert_int_equal(sign_day(DATE_T + 3600), 20261122);
    assert_int_equal(sign_day(0), 19700101);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),     cmocka_unit_test(test_parse_authorization),
        cmocka_unit_test(test_parse_date),  cmocka_unit_test(test_media_type_and_equal),
        cmocka_unit_test(test_new_keypair), cmocka_unit_test(test_keyed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
