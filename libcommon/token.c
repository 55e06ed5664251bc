/* token.c: bearer secrets (token.h). */
#include "libcommon/token.h"

#include <sodium.h>

void ts_token_new(char out[TS_TOKEN_LEN + 1])
{
    if (sodium_init() < 0) ts_panic("sodium_init failed");
    unsigned char raw[32];
    randombytes_buf(raw, sizeof(raw));
    sodium_bin2base64(out, TS_TOKEN_LEN + 1, raw, sizeof(raw),
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero(raw, sizeof(raw));
}

static bool b64url_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

bool ts_token_syntax_ok(const char *s, size_t n)
{
    if (!s || n != TS_TOKEN_LEN) return false;
    for (size_t i = 0; i < n; i++)
        if (!b64url_char(s[i])) return false;
    return true;
}
