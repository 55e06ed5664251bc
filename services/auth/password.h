/* password.h: the password hashing every part of tessera-auth uses (login,
 * password change, users, bootstrap).
 *
 * Hashing is libsodium's crypto_pwhash_str (argon2id) at
 * OPSLIMIT_INTERACTIVE / MEMLIMIT_INTERACTIVE: about 0.1 s of CPU and 64 MiB
 * of memory per hash or verification. At most auth.password_hash_concurrency
 * (default 2) run at once; the others wait, so a burst of logins costs time,
 * never more than concurrency x 64 MiB. */
#ifndef AUTH_PASSWORD_H
#define AUTH_PASSWORD_H

#include "libcommon/common.h"

/* Minimum and maximum password lengths, in bytes. */
#define PASSWORD_MIN 8
#define PASSWORD_MAX 256
/* The size of a hash string (crypto_pwhash_STRBYTES at most). */
#define PASSWORD_HASH_MAX 128

/* Once, before serving: how many hashes run at once (>= 1). */
void password_configure(int hash_concurrency);

/* The argon2id string for password into out. False only when libsodium
 * cannot get the memory. */
bool password_hash(const char *password, char out[PASSWORD_HASH_MAX]) TS_MUST_CHECK;

/* Does password match hash? hash NULL: spend the same time against a dummy
 * hash and answer false (no timing difference for unknown users). */
bool password_verify(const char *hash, const char *password) TS_MUST_CHECK;

#endif
