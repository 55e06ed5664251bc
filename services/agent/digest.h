/* digest.h: OCI content digests ("sha256:<64 hex>"), computed while streaming
 * (libsodium's crypto_hash_sha256). Only sha256 is supported: it is what every
 * registry and image builder uses; anything else is refused with a message. */
#ifndef AGENT_DIGEST_H
#define AGENT_DIGEST_H

#include "libcommon/common.h"

#include <sodium.h>

/* "sha256:" + 64 hex + NUL */
#define DIGEST_STRLEN 72
#define DIGEST_HEXLEN 64

typedef struct digest_ctx {
    crypto_hash_sha256_state st;
    int64_t bytes; /* fed so far */
} digest_ctx;

void digest_init(digest_ctx *d);
void digest_update(digest_ctx *d, const void *data, size_t len);
/* out: "sha256:<hex>". The context is spent afterwards. */
void digest_final(digest_ctx *d, char out[DIGEST_STRLEN]);

/* Digest of a memory buffer. */
void digest_buf(const void *data, size_t len, char out[DIGEST_STRLEN]);

/* A well-formed "sha256:<64 lowercase hex>"? hex (may be NULL) gets the hex part. */
bool digest_valid(const char *digest, ts_err *err) TS_MUST_CHECK;
/* The hex part of a valid digest (pointer into digest). */
const char *digest_hex(const char *digest);

/* Digest of a whole file; false (err set) when it cannot be read. */
bool digest_file(const char *path, char out[DIGEST_STRLEN], int64_t *size,
                 ts_err *err) TS_MUST_CHECK;

#endif
