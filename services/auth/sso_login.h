/* sso_login.h: the single sign-on login of tessera-auth: POST /v1/authorize
 * {"type": "token", "token": "<JWT>", "client_addr"?} (the gateway's
 * /server/token-login calls it). The token is verified (sso_token.h); its
 * jti is recorded in auth.sso_used_tokens so that it logs in once; the user
 * named by its email must exist and be active. Answers as the password
 * login: 200 {"data": {access_key, secret_key, role, status}}; 401
 * auth-failed saying why (a bad, expired or used token, an unknown or
 * inactive user); 400 when single sign-on is not configured. */
#ifndef AUTH_SSO_LOGIN_H
#define AUTH_SSO_LOGIN_H

#include "libcommon/svc.h"

#include <jansson.h>

typedef struct sso_config {
    const char *secret_file; /* auth.sso_secret_file; NULL or "": off */
    const char *issuer;      /* auth.sso_issuer */
    const char *audience;    /* auth.sso_audience */
    int64_t max_age_ms;      /* auth.sso_max_age */
} sso_config;

/* Once, before serving: reads the secret file (its content without trailing
 * newlines, at least 32 bytes). false with err when a configured file is
 * unusable. */
bool sso_login_configure(const sso_config *c, ts_err *err) TS_MUST_CHECK;

/* Whether single sign-on is configured. */
bool sso_login_enabled(void) TS_MUST_CHECK;

/* POST /v1/authorize with "type": "token" (body: the parsed request). */
void sso_login_authorize(svc *s, http_req *req, http_resp *resp, json_t *body);

#endif
