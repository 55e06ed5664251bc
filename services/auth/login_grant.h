/* login_grant.h: the answer of a login that succeeded, shared by the
 * password login (login.h) and the single sign-on login (sso_login.h). */
#ifndef AUTH_LOGIN_GRANT_H
#define AUTH_LOGIN_GRANT_H

#include "libcommon/http.h"

#include <libpq-fe.h>

/* The answer of a login that succeeded for user uid (its role and status):
 * 200 {"data": {access_key, secret_key, role, status}} with the user's
 * first active keypair (and "email" when given: the token login, whose
 * caller does not know it), 401 when it has none. how names the login in
 * the log line ("login", "token login"). */
void login_grant(PGconn *conn, http_resp *resp, const char *uid, const char *role,
                 const char *status, const char *email, const char *how, const char *qaddr);

#endif
