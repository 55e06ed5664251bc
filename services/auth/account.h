/* account.h: what a signed caller does to its own account, as Backend.AI's
 * /auth routes: POST /v1/auth/update-full-name {email, full_name} and POST
 * /v1/auth/signout {email|username, password} (the account and its keypairs
 * become inactive). The email must be the caller's own (403 otherwise). */
#ifndef AUTH_ACCOUNT_H
#define AUTH_ACCOUNT_H

#include "libcommon/svc.h"

void account_routes(svc *s);

#endif
