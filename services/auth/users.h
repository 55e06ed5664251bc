/* users.h: the admin REST API for users, /v1/admin/users (docs/api.md).
 * Superadmins manage everyone; domain admins the non-superadmins of their
 * domain; users read themselves and change their own full_name and
 * description only. DELETE marks the user deleted and revokes its keypairs. */
#ifndef AUTH_USERS_H
#define AUTH_USERS_H

#include "libcommon/svc.h"

void users_routes(svc *s);

#endif
