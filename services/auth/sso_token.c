/* sso_token.c: HS256 JSON Web Tokens for single sign-on (sso_token.h). */
#include "sso_token.h"

#include <jansson.h>
#include <sodium.h>
#include <string.h>

/* base64url without padding -> bytes (heap, NUL-terminated); NULL when it is not. */
static unsigned char *_b64url(const char *s, size_t n, size_t *len)
{
    unsigned char *out = ts_malloc(n + 1);
    size_t got = 0;
    const char *end = NULL;
    if (sodium_base642bin(out, n, s, n, NULL, &got, &end,
                          sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
        end != s + n) {
        free(out);
        return NULL;
    }
    out[got] = '\0';
    *len = got;
    return out;
}

static json_t *_part_json(const char *s, size_t n)
{
    size_t len = 0;
    unsigned char *raw = _b64url(s, n, &len);
    if (!raw) return NULL;
    json_t *j = json_loadb((const char *)raw, len, JSON_REJECT_DUPLICATES, NULL);
    free(raw);
    if (j && !json_is_object(j)) {
        json_decref(j);
        j = NULL;
    }
    return j;
}

/* A numeric claim: *present, and false when present but not a number. */
static bool _num(const json_t *claims, const char *name, bool *present, int64_t *out)
{
    const json_t *v = json_object_get(claims, name);
    *present = v != NULL;
    if (!v) return true;
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
    } else if (json_is_real(v) && json_real_value(v) > -1e15 && json_real_value(v) < 1e15) {
        *out = (int64_t)json_real_value(v); /* Unix seconds, whatever a fraction */
    } else {
        return false;
    }
    return *out > -1000000000000000LL && *out < 1000000000000000LL;
}

static bool _audience_ok(const json_t *aud, const char *want)
{
    if (json_is_string(aud)) return strcmp(json_string_value(aud), want) == 0;
    size_t i;
    const json_t *v;
    json_array_foreach(aud, i, v) if (json_is_string(v) &&
                                      strcmp(json_string_value(v), want) == 0) return true;
    return false;
}

static bool _claims_ok(const json_t *c, const sso_opts *o, int64_t now, sso_claims *out,
                       ts_err *err)
{
    int64_t exp = 0, iat = 0, nbf = 0;
    bool has_exp, has_iat, has_nbf;
    if (!_num(c, "exp", &has_exp, &exp) || !_num(c, "iat", &has_iat, &iat) ||
        !_num(c, "nbf", &has_nbf, &nbf)) {
        ts_err_set(err, "the token's exp, iat and nbf must be numbers (Unix seconds)");
        return false;
    }
    if (!has_exp) {
        ts_err_set(err, "the token has no exp (expiry)");
        return false;
    }
    if (exp + SSO_SKEW_S < now) {
        ts_err_set(err, "the token expired");
        return false;
    }
    if ((has_nbf && nbf - SSO_SKEW_S > now) || (has_iat && iat - SSO_SKEW_S > now)) {
        ts_err_set(err, "the token is not valid yet");
        return false;
    }
    if (exp - (has_iat ? iat : now) > o->max_age_s) {
        ts_err_set(err, "the token lives longer than %lld s (auth.sso_max_age)",
                   (long long)o->max_age_s);
        return false;
    }
    const char *iss = json_string_value(json_object_get(c, "iss"));
    if (o->issuer && *o->issuer && (!iss || strcmp(iss, o->issuer) != 0)) {
        ts_err_set(err, "the token's issuer is not the one trusted");
        return false;
    }
    if (o->audience && *o->audience && !_audience_ok(json_object_get(c, "aud"), o->audience)) {
        ts_err_set(err, "the token is not meant for this audience");
        return false;
    }
    const char *email = json_string_value(json_object_get(c, "email"));
    if (!email) email = json_string_value(json_object_get(c, "sub"));
    const char *jti = json_string_value(json_object_get(c, "jti"));
    if (!email || !*email || strlen(email) >= sizeof(out->email)) {
        ts_err_set(err, "the token names no user (email or sub)");
        return false;
    }
    if (!jti || !*jti || strlen(jti) >= sizeof(out->jti)) {
        ts_err_set(err, "the token has no jti (1 to 128 bytes): tokens are used once");
        return false;
    }
    ts_strlcpy(out->email, email, sizeof(out->email));
    ts_strlcpy(out->jti, jti, sizeof(out->jti));
    out->exp = exp;
    return true;
}

bool sso_token_verify(const char *token, const sso_opts *o, int64_t now_s, sso_claims *out,
                      ts_err *err)
{
    memset(out, 0, sizeof(*out));
    size_t n = token ? strlen(token) : 0;
    const char *d1 = token ? strchr(token, '.') : NULL;
    const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    if (n == 0 || n > SSO_TOKEN_MAX || !d1 || !d2 || strchr(d2 + 1, '.')) {
        ts_err_set(err, "not a token (header.claims.signature)");
        return false;
    }
    if (!o->secret || o->secret_len < SSO_SECRET_MIN) {
        ts_err_set(err, "single sign-on is not configured");
        return false;
    }
    /* the signature first: nothing of an unsigned token is believed */
    size_t slen = 0;
    unsigned char *sig = _b64url(d2 + 1, n - (size_t)(d2 + 1 - token), &slen);
    unsigned char mac[crypto_auth_hmacsha256_BYTES];
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, o->secret, o->secret_len);
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)token, (size_t)(d2 - token));
    crypto_auth_hmacsha256_final(&st, mac);
    bool signed_ok = sig && slen == sizeof(mac) && sodium_memcmp(sig, mac, sizeof(mac)) == 0;
    free(sig);
    if (!signed_ok) {
        ts_err_set(err, "the token's signature is wrong");
        return false;
    }
    json_t *h = _part_json(token, (size_t)(d1 - token));
    const char *alg = json_string_value(json_object_get(h, "alg"));
    bool h_ok = h && alg && strcmp(alg, "HS256") == 0;
    json_decref(h);
    if (!h_ok) {
        ts_err_set(err, "the token's header is not {\"alg\": \"HS256\"}");
        return false;
    }
    json_t *c = _part_json(d1 + 1, (size_t)(d2 - d1 - 1));
    if (!c) {
        ts_err_set(err, "the token's claims are not a JSON object");
        return false;
    }
    bool ok = _claims_ok(c, o, now_s, out, err);
    json_decref(c);
    return ok;
}
