/* token.h: bearer secrets: 32 random bytes (libsodium randombytes),
 * base64url without padding, 43 characters. wsproxy's app tokens and
 * cookies and the gateway's browser sessions and CSRF tokens are such
 * tokens. */
#ifndef TESSERA_TOKEN_H
#define TESSERA_TOKEN_H

#include "libcommon/common.h"

#define TS_TOKEN_LEN 43

/* A fresh random token. */
void ts_token_new(char out[TS_TOKEN_LEN + 1]);
/* s (n bytes) is 43 characters of [A-Za-z0-9_-]. */
bool ts_token_syntax_ok(const char *s, size_t n) TS_MUST_CHECK;

#endif
