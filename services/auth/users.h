/* users.h: the admin REST API for users, /v1/admin/users (docs/api.md).
 * Superadmins manage everyone; domain admins the non-superadmins of their
 * domain; users read themselves and change their own full_name and
 * description only. DELETE marks the user deleted and revokes its keypairs. */
#ifndef AUTH_USERS_H
#define AUTH_USERS_H

#include "admin.h"

#include "libcommon/svc.h"

void users_routes(svc *s);

/* Inside a transaction: user id's status set (deleted, inactive) and its
 * active keypairs revoked, their access keys in *keys (the caller clears
 * it and publishes the changes). False after a problem in a->fr.resp. */
bool users_retire(admin_req *a, const char *id, const char *status, PGresult **keys) TS_MUST_CHECK;

#endif
