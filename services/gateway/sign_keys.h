/* sign_keys.h: the derived signing keys a gateway thread has used, so that a
 * signature check costs one HMAC (of string_to_sign) instead of three.
 *
 * A key depends on the secret, the UTC day of the request's date and its Host
 * header (libcommon/sign.h). Each thread keeps a small direct-mapped table of
 * them, found by access key, day and host and used only when the secret it
 * was made from equals the credential's secret now, so a changed secret never
 * meets a stale key. No locks: the table is the thread's own. */
#ifndef TESSERA_GATEWAY_SIGN_KEYS_H
#define TESSERA_GATEWAY_SIGN_KEYS_H

#include "libcommon/sign.h"

#include <stdint.h>

/* The key for (access_key, secret_key, the day of date, host): from this
 * thread's table, or derived (and remembered, unless host is longer than the
 * table keeps) into *scratch. The result points into the table or at
 * scratch; it stays valid until this thread's next call. */
const sign_key *sign_keys_get(const char *access_key, const char *secret_key, time_t date,
                              const char *host, sign_key *scratch);

typedef struct sign_keys_stats {
    uint64_t hits, misses;
} sign_keys_stats;

/* Totals over every thread. */
void sign_keys_stats_get(sign_keys_stats *out);

#endif
