/* sso_token.h: single sign-on tokens (Backend.AI's POST /server/token-login,
 * docs/console.md "Single sign-on"). An organisation's identity provider
 * (or any service it trusts) mints a JSON Web Token signed with HS256 and a
 * secret shared with tessera-auth (auth.sso_secret_file); the browser brings
 * it as the sToken cookie or body field, and tessera-auth logs its user in:
 *
 *   header  {"alg": "HS256", "typ": "JWT"}     (typ optional; no other alg)
 *   claims  "email" (or "sub"): the user's email, required
 *           "exp": required, a number; "iat", "nbf": optional numbers
 *           "jti": required, 1 to 128 bytes: the token is used once
 *           "iss": must equal auth.sso_issuer when that is set
 *           "aud": must be or contain auth.sso_audience when that is set
 *
 * A token is refused when its signature is wrong, it is expired or not yet
 * valid (30 s of clock skew allowed), it lives longer than auth.sso_max_age
 * (exp - iat, or exp - now without iat), or a claim is missing or of the
 * wrong type. The verification is a pure function (unit-tested); the use-once
 * record of jti is tessera-auth's (login.c, auth.sso_used_tokens). */
#ifndef AUTH_SSO_TOKEN_H
#define AUTH_SSO_TOKEN_H

#include "libcommon/common.h"

#include <stddef.h>
#include <stdint.h>

#define SSO_TOKEN_MAX 8192
#define SSO_SKEW_S 30
#define SSO_SECRET_MIN 32

typedef struct sso_opts {
    const unsigned char *secret;
    size_t secret_len;    /* >= SSO_SECRET_MIN */
    const char *issuer;   /* NULL or "": not checked */
    const char *audience; /* NULL or "": not checked */
    int64_t max_age_s;
} sso_opts;

typedef struct sso_claims {
    char email[255];
    char jti[129];
    int64_t exp;
} sso_claims;

/* Verify token against o at time now_s (Unix seconds). false with err saying
 * why, in words for a log and the user (never the secret). */
bool sso_token_verify(const char *token, const sso_opts *o, int64_t now_s, sso_claims *out,
                      ts_err *err) TS_MUST_CHECK;

#endif
