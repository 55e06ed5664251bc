/* tokens.h: short-lived signed transfer tokens.
 *
 * request-upload and request-download (through the gateway, with the
 * caller's permission checked there) hand the client a token; the client
 * presents it to tessera-vfolder's transfer endpoints directly. A token is
 *
 *     base64url(payload JSON) "." base64url(HMAC-SHA256(secret, first part))
 *
 * with the payload {"v":1, "op":"upload"|"download", "fid": folder id,
 * "host": its volume, "path", "size" (upload: its length; download: -1), "uid": user id, "exp":
 * unix seconds, "id": upload id or a nonce, "archive": bool}. The secret is
 * vfolder.token_secret, or one generated at first start and kept in
 * PostgreSQL (vfolder.transfer_secrets) so that every replica shares it. */
#ifndef VFOLDER_TOKENS_H
#define VFOLDER_TOKENS_H

#include "libcommon/common.h"

#include <stdint.h>

#define VF_TOKEN_SECRET_MIN 16

typedef enum vf_token_op { VF_TOKEN_UPLOAD = 1, VF_TOKEN_DOWNLOAD = 2 } vf_token_op;

typedef struct vf_token {
    vf_token_op op;
    char fid[TS_UUID_STRLEN];
    char uid[TS_UUID_STRLEN];
    char id[TS_UUID_STRLEN];
    char host[72]; /* the folder's volume */
    char *path;    /* heap */
    int64_t size;
    int64_t exp; /* unix seconds */
    bool archive;
} vf_token;

typedef enum vf_token_rc {
    VF_TOKEN_OK = 0,
    VF_TOKEN_MALFORMED, /* not a token, or the signature does not match */
    VF_TOKEN_EXPIRED,
} vf_token_rc;

/* The secret (at least VF_TOKEN_SECRET_MIN bytes); copied. */
void vf_token_set_secret(const char *secret);
bool vf_token_has_secret(void) TS_MUST_CHECK;
/* A fresh random secret (64 characters of base64url, heap). */
char *vf_token_new_secret(void);

/* Sign t (exp set by the caller): heap string. */
char *vf_token_sign(const vf_token *t);
/* Verify text against the secret and now (unix seconds); on OK *out is
 * filled (free with vf_token_free). */
vf_token_rc vf_token_verify(const char *text, int64_t now, vf_token *out) TS_MUST_CHECK;
void vf_token_free(vf_token *t);

#endif
