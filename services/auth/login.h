/* login.h: password login (POST /v1/authorize) with lockout, GET /v1/role,
 * POST /v1/update-password, and the password hashing everyone uses.
 *
 * Hashing is libsodium's crypto_pwhash_str (argon2id) at
 * OPSLIMIT_INTERACTIVE / MEMLIMIT_INTERACTIVE: about 0.1 s of CPU and 64 MiB
 * of memory per hash or verification. At most auth.password_hash_concurrency
 * (default 2) run at once; the others wait, so a burst of logins costs time,
 * never more than concurrency x 64 MiB. */
#ifndef AUTH_LOGIN_H
#define AUTH_LOGIN_H

#include "libcommon/svc.h"

typedef struct login_opts {
    int lockout_failures; /* consecutive failures that lock (>= 1) */
    int64_t lockout_ms;   /* how long a lock lasts */
    int hash_concurrency; /* argon2id computations at once (>= 1) */
} login_opts;

/* Once, before serving. */
void login_configure(const login_opts *o);

void login_routes(svc *s);

/* The argon2id string for password into out (crypto_pwhash_STRBYTES). False
 * only when libsodium cannot get the memory. */
#define LOGIN_HASH_MAX 128
bool login_password_hash(const char *password, char out[LOGIN_HASH_MAX]) TS_MUST_CHECK;
/* Does password match hash? hash NULL: spend the same time against a dummy
 * hash and answer false (no timing difference for unknown users). */
bool login_password_verify(const char *hash, const char *password);

/* Minimum and maximum password lengths, in bytes. */
#define LOGIN_PASSWORD_MIN 8
#define LOGIN_PASSWORD_MAX 256

#endif
