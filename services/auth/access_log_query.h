/* access_log_query.h: GET /v1/admin/access-log, the stored ApiAccess records
 * (docs/api.md "Admin REST"), newest first, paged, with the filters
 *   access_key   exact (as the request named it, 1..64 printable ASCII)
 *   user_id      exact (UUID)
 *   method       exact, case-insensitive (1..16 letters)
 *   path_prefix  the path starts with it (begins with '/', up to 1024 bytes)
 *   status       exact HTTP status (100..599)
 *   since, until ISO-8601 times (date, or date and time with optional
 *                seconds, fraction and Z / +hh:mm offset; none = UTC);
 *                since <= occurred_at < until
 * Scope: a superadmin sees every record; a domain admin the records of the
 * users of its domain (by user id, or by an access key of such a user), not
 * superadmins'; a user its own records. Filters only narrow that scope:
 * naming someone outside it gives an empty page, never 403.
 * Cost: the records are read through the view auth.access_log, which unnests
 * auth.access_blocks. since/until, access_key, user_id and the caller's
 * scope skip the blocks that cannot match (their time range, the keys and
 * users they hold); every record of the other blocks is read, for the total
 * and for the order. A superadmin's query with no filter, or one access key
 * or one user id only, sums the blocks' counts and reads only the newest
 * blocks. */
#ifndef AUTH_ACCESS_LOG_QUERY_H
#define AUTH_ACCESS_LOG_QUERY_H

#include "libcommon/svc.h"

void access_log_query_routes(svc *s);

/* Check an ISO-8601 time as described above and write it in a form
 * PostgreSQL reads as timestamptz (UTC added when no offset is given); a
 * '+' decoded to ' ' from a query string is taken back. */
bool access_log_query_time(const char *in, char *out, size_t size) TS_MUST_CHECK;

#endif
