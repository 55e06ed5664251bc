/* test_sso_token.c: single sign-on tokens (sso_token.c): a token made by
 * another implementation (Python's hmac, pinned below) verifies; every
 * refusal a forged, expired, early, long-lived, foreign or malformed token
 * must get, and that nothing but HS256 is accepted. */
#include "services/auth/sso_token.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char k_secret[] = "0123456789abcdef0123456789abcdef";
static const sso_opts k_opts = {k_secret, 32, NULL, NULL, 300};

/* Python: hmac.new(secret, h + "." + c, sha256), base64url without padding. */
static const char k_python[] =
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJlbWFpbCI6ImFAYi5jIiwianRpIjoiajEiLCJpYXQiOjEwMDAsImV4"
    "cCI6MTEwMH0.phIq99XpkK3WQHwSoNDKVq_vYcGrnop6C3KsaKs-NcI";

static char *b64(const char *s, size_t n)
{
    size_t cap = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    char *out = malloc(cap);
    sodium_bin2base64(out, cap, (const unsigned char *)s, n,
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    return out;
}

/* header.claims signed with secret (NULL: the test's) */
static char *mint(const char *header, const char *claims, const unsigned char *secret)
{
    char *h = b64(header, strlen(header)), *c = b64(claims, strlen(claims));
    char *hc = malloc(strlen(h) + strlen(c) + 2);
    sprintf(hc, "%s.%s", h, c);
    unsigned char mac[crypto_auth_hmacsha256_BYTES];
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, secret ? secret : k_secret, 32);
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)hc, strlen(hc));
    crypto_auth_hmacsha256_final(&st, mac);
    char *s = b64((const char *)mac, sizeof(mac));
    char *t = malloc(strlen(hc) + strlen(s) + 2);
    sprintf(t, "%s.%s", hc, s);
    free(h);
    free(c);
    free(hc);
    free(s);
    return t;
}

static const char *H = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";

static void refused(const char *token, const sso_opts *o, int64_t now, const char *why)
{
    sso_claims c;
    ts_err err = {{0}};
    assert_false(sso_token_verify(token, o, now, &c, &err));
    if (!strstr(err.msg, why)) fail_msg("'%s' does not say '%s'", err.msg, why);
}

static void test_verifies(void **state)
{
    (void)state;
    sso_claims c;
    ts_err err = {{0}};
    assert_true(sso_token_verify(k_python, &k_opts, 1050, &c, &err));
    assert_string_equal(c.email, "a@b.c");
    assert_string_equal(c.jti, "j1");
    assert_int_equal(c.exp, 1100);
    /* sub instead of email; issuer and audience when asked for */
    char *t = mint(H,
                   "{\"sub\":\"u@x\",\"jti\":\"2\",\"exp\":1100,\"iss\":\"idp\","
                   "\"aud\":[\"other\",\"tessera\"]}",
                   NULL);
    sso_opts o = k_opts;
    o.issuer = "idp";
    o.audience = "tessera";
    assert_true(sso_token_verify(t, &o, 1000, &c, &err));
    assert_string_equal(c.email, "u@x");
    o.issuer = "another";
    refused(t, &o, 1000, "issuer");
    o.issuer = "idp";
    o.audience = "nope";
    refused(t, &o, 1000, "audience");
    free(t);
}

static void test_refusals(void **state)
{
    (void)state;
    /* time: expired (beyond the skew), early, too long-lived */
    refused(k_python, &k_opts, 1100 + SSO_SKEW_S + 1, "expired");
    refused(k_python, &k_opts, 1000 - SSO_SKEW_S - 1, "not valid yet");
    sso_opts shortlived = k_opts;
    shortlived.max_age_s = 60;
    refused(k_python, &shortlived, 1050, "longer than 60 s");
    /* forged: another secret, a changed claim, a cut signature */
    static const unsigned char other[] = "ffffffffffffffffffffffffffffffff";
    char *t = mint(H, "{\"email\":\"a@b.c\",\"jti\":\"1\",\"exp\":1100}", other);
    refused(t, &k_opts, 1050, "signature");
    free(t);
    char forged[sizeof(k_python)];
    memcpy(forged, k_python, sizeof(k_python));
    forged[40] = forged[40] == 'A' ? 'B' : 'A';
    refused(forged, &k_opts, 1050, "signature");
    char cut[sizeof(k_python)];
    memcpy(cut, k_python, sizeof(k_python));
    cut[sizeof(k_python) - 5] = '\0';
    refused(cut, &k_opts, 1050, "signature");
    /* only HS256, whatever the header says */
    t = mint("{\"alg\":\"none\"}", "{\"email\":\"a@b.c\",\"jti\":\"1\",\"exp\":1100}", NULL);
    refused(t, &k_opts, 1050, "HS256");
    free(t);
    /* claims */
    struct {
        const char *claims, *why;
    } cases[] = {
        {"{\"jti\":\"1\",\"exp\":1100}", "names no user"},
        {"{\"email\":\"\",\"jti\":\"1\",\"exp\":1100}", "names no user"},
        {"{\"email\":\"a@b.c\",\"exp\":1100}", "jti"},
        {"{\"email\":\"a@b.c\",\"jti\":\"1\"}", "no exp"},
        {"{\"email\":\"a@b.c\",\"jti\":\"1\",\"exp\":\"1100\"}", "must be numbers"},
        {"{\"email\":7,\"jti\":\"1\",\"exp\":1100}", "names no user"},
        {"{\"email\":\"a@b.c\",\"jti\":\"1\",\"exp\":1e21}", "must be numbers"},
        {"{\"email\":\"a@b.c\",\"jti\":\"1\",\"exp\":9223372036854775807}", "must be numbers"},
        {"[1,2]", "not a JSON object"},
        {"{\"email\":\"a@b.c\",\"email\":\"b@b.c\",\"jti\":\"1\",\"exp\":1100}", "JSON object"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        t = mint(H, cases[i].claims, NULL);
        refused(t, &k_opts, 1050, cases[i].why);
        free(t);
    }
    /* not tokens, and no secret configured */
    refused("", &k_opts, 1050, "not a token");
    refused("a.b", &k_opts, 1050, "not a token");
    refused("a.b.c.d", &k_opts, 1050, "not a token");
    refused("a.b.c", &k_opts, 1050, "signature");
    refused(NULL, &k_opts, 1050, "not a token");
    sso_opts none = {NULL, 0, NULL, NULL, 300};
    refused(k_python, &none, 1050, "not configured");
    char *huge = malloc(SSO_TOKEN_MAX + 10);
    memset(huge, 'a', SSO_TOKEN_MAX + 9);
    huge[10] = '.';
    huge[20] = '.';
    huge[SSO_TOKEN_MAX + 9] = '\0';
    refused(huge, &k_opts, 1050, "not a token");
    free(huge);
}

int main(void)
{
    if (sodium_init() < 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verifies),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
