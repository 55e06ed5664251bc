/* keypairs.h: the admin REST API for keypairs, /v1/admin/keypairs
 * (docs/api.md). Superadmins: every keypair; domain admins: keypairs of the
 * users of their domain (never granting is_admin to a superadmin's keypair,
 * which they cannot see anyway); users: list and get their own (without the
 * secret), but not issue, change or revoke. The secret key appears only in
 * the answer to POST (issue). DELETE revokes: is_active false, revoked_at
 * now, KeypairRevoked. */
#ifndef AUTH_KEYPAIRS_H
#define AUTH_KEYPAIRS_H

#include "libcommon/svc.h"

void keypairs_routes(svc *s);

/* Inside the caller's transaction on conn: a fresh keypair for user_id with
 * the "default" policy and the default rate limit (a new user's main
 * keypair). The access key goes to ak_out. False after a problem was sent. */
bool keypairs_issue_main(PGconn *conn, http_resp *resp, const char *user_id, bool is_admin,
                         char ak_out[21]) TS_MUST_CHECK;

#endif
