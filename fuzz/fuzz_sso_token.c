/* fuzz_sso_token.c: single sign-on tokens (services/auth/sso_token.c). The
 * first byte picks the case: even, the rest is a token as sent (splitting,
 * base64url, the signature check); odd, the rest is "header\0claims", which
 * the harness encodes and signs with the secret, so that the JSON and claim
 * checks behind the signature are reached. Checks: a refusal says why; an
 * accepted token has an email, a jti and an expiry within the limits. */
#include "services/auth/sso_token.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const unsigned char k_secret[] = "fuzz-secret-fuzz-secret-fuzz-secret!";

static char *b64(const uint8_t *s, size_t n)
{
    size_t cap = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    char *out = malloc(cap);
    sodium_bin2base64(out, cap, s, n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    return out;
}

static char *sign(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, '\0', size);
    size_t hl = nul ? (size_t)(nul - data) : size;
    const uint8_t *claims = nul ? nul + 1 : data + size;
    size_t cl = nul ? size - hl - 1 : 0;
    char *h = b64(data, hl), *c = b64(claims, cl);
    size_t n = strlen(h) + strlen(c) + 1;
    char *t = malloc(n + 1 + 64);
    memcpy(t, h, strlen(h));
    t[strlen(h)] = '.';
    memcpy(t + strlen(h) + 1, c, strlen(c) + 1);
    unsigned char mac[crypto_auth_hmacsha256_BYTES];
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, k_secret, sizeof(k_secret) - 1);
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)t, n);
    crypto_auth_hmacsha256_final(&st, mac);
    char *s = b64(mac, sizeof(mac));
    t[n] = '.';
    memcpy(t + n + 1, s, strlen(s) + 1);
    free(h);
    free(c);
    free(s);
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || sodium_init() < 0) return 0;
    char *token;
    if (data[0] & 1) {
        token = sign(data + 1, size - 1);
    } else {
        token = malloc(size);
        memcpy(token, data + 1, size - 1);
        token[size - 1] = '\0';
    }
    sso_opts o = {k_secret, sizeof(k_secret) - 1, (data[0] & 2) ? "idp" : NULL,
                  (data[0] & 4) ? "tessera" : NULL, 300};
    sso_claims c;
    ts_err err = {{0}};
    if (sso_token_verify(token, &o, 1000000, &c, &err)) {
        if (!c.email[0] || !c.jti[0]) abort();
        if (c.exp + SSO_SKEW_S < 1000000) abort();
    } else if (!err.msg[0]) {
        abort();
    }
    free(token);
    return 0;
}
