/* sign.h: Backend.AI request signing (api-compat.md), used by the gateway to
 * verify and by the `tessera` CLI to sign.
 *
 *   key1 = HMAC-SHA256(secret_key, date_utc as "%Y%m%d")
 *   key  = HMAC-SHA256(key1, host)           host: the Host header as sent
 *   sig  = hex(HMAC-SHA256(key, string_to_sign))
 *   string_to_sign = METHOD "\n" path_with_query "\n" raw_date "\n"
 *                    "host:" host "\n" "content-type:" media_type "\n"
 *                    "x-backendai-version:" version "\n" hex(SHA256(body_part))
 *
 * media_type is the Content-Type without parameters ("application/json" when
 * absent); body_part is empty from v4.20181215 on, the body before that. */
#ifndef TESSERA_SIGN_H
#define TESSERA_SIGN_H

#include "libcommon/common.h"

#include <sodium.h>
#include <time.h>

#define SIGN_HEX_LEN 64
#define SIGN_ACCESS_KEY_LEN 20
#define SIGN_SECRET_KEY_LEN 40

typedef struct sign_input {
    const char *method;       /* "GET" */
    const char *target;       /* raw path with query, as sent */
    const char *raw_date;     /* the Date / X-BackendAI-Date value as sent */
    time_t date;              /* that value parsed (UTC seconds) */
    const char *host;         /* Host header as sent, port included */
    const char *content_type; /* Content-Type header as sent, or NULL */
    const char *version;      /* X-BackendAI-Version as sent */
    const void *body;         /* hashed only for versions before v4.20181215 */
    size_t body_len;
} sign_input;

/* hex_out receives SIGN_HEX_LEN chars plus NUL. */
void sign_compute(const char *secret_key, const sign_input *in, char hex_out[SIGN_HEX_LEN + 1]);

/* The signing key of one secret, UTC day and host, kept as the HMAC state
 * keyed with it (so a signature with it costs one HMAC of string_to_sign,
 * not three HMACs): what a verifier may cache per (access key, day, host).
 * As secret as the secret key itself; sign_key_wipe() clears it. */
typedef struct sign_key {
    crypto_auth_hmacsha256_state st;
} sign_key;

void sign_key_derive(const char *secret_key, time_t date, const char *host, sign_key *out);
/* sign_compute() with a key from sign_key_derive(secret_key, in->date, in->host). */
void sign_compute_keyed(const sign_key *key, const sign_input *in, char hex_out[SIGN_HEX_LEN + 1]);
/* The UTC day of a date as YYYYMMDD (20261122): what a derived key depends on. */
int sign_day(time_t date);
void sign_key_wipe(sign_key *key);

/* Parse "BackendAI signMethod=HMAC-SHA256, credential=<AK>:<hex>". False (err
 * says what is wrong) for another scheme, another method, missing parts. */
bool sign_parse_authorization(const char *header, char access_key[SIGN_ACCESS_KEY_LEN + 1],
                              char signature[SIGN_HEX_LEN + 1], ts_err *err) TS_MUST_CHECK;

/* Parse ISO-8601 with a timezone offset or Z ("2026-11-21T23:40:01.123+00:00"),
 * or RFC 7231 ("Sat, 21 Nov 2026 23:40:01 GMT"); no timezone means UTC. */
bool sign_parse_date(const char *value, time_t *out) TS_MUST_CHECK;

/* The media type without parameters, lower-cased, into out. */
void sign_media_type(const char *content_type, char *out, size_t size);

/* Constant-time comparison of two NUL-terminated strings of equal length. */
bool sign_equal(const char *a, const char *b) TS_MUST_CHECK;

/* Fresh credentials: 20 of [A-Z0-9] and 40 of [A-Za-z0-9] (libsodium randombytes). */
void sign_new_keypair(char access_key[SIGN_ACCESS_KEY_LEN + 1],
                      char secret_key[SIGN_SECRET_KEY_LEN + 1]);

#endif
