/* login.h: password login (POST /v1/authorize) with lockout, GET /v1/role
 * and POST /v1/update-password. The hashing behind them is password.h; the
 * single sign-on login ({"type": "token"}) is sso_login.h. */
#ifndef AUTH_LOGIN_H
#define AUTH_LOGIN_H

#include "libcommon/svc.h"

typedef struct login_opts {
    int lockout_failures; /* consecutive failures that lock (>= 1) */
    int64_t lockout_ms;   /* how long a lock lasts */
} login_opts;

/* Once, before serving. */
void login_configure(const login_opts *o);

void login_routes(svc *s);

#endif
