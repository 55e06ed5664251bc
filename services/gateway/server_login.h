/* server_login.h: the console's password login, Backend.AI webserver style
 * (docs/console.md "Logging in"):
 *   POST /server/login {username, password[, domain]}: tessera-auth checks
 *     the password (its lockout included) and names the user's keypair; a
 *     browser session is made (websession.h), its id set as the HttpOnly,
 *     SameSite=Strict cookie tessera_sid. 200 {"authenticated": true,
 *     "data": {access_key, user_id, username, role, domain}, "csrf_token"};
 *     auth's refusal as it gave it (401 wrong credentials, 429 locked).
 *   GET or POST /server/login-check: {"authenticated": false} or, for a
 *     live login, as the login answers; the csrf_token only to a request from
 *     the console's own page (websession_from_page: its Origin or
 *     Sec-Fetch-Site), so that the cookie alone, replayed by a script that
 *     got hold of it, does not also yield the token.
 *   POST /server/logout [{"everywhere": true}] (the CSRF token needed): ends
 *     the login (or every login of the user) and clears the cookie.
 * The secret key never leaves the gateway. API calls of a logged-in browser
 * go to /func/<API path> (verify.c admits them as the login's keypair). */
#ifndef GATEWAY_SERVER_LOGIN_H
#define GATEWAY_SERVER_LOGIN_H

#include "gateway.h"

void server_login_routes(gateway *gw);

#endif
