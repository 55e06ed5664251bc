/* utf8.c: strict UTF-8 decoding (utf8.h). */
#include "libcommon/utf8.h"

#include <string.h>

/* A character's length by the high nibble of its lead byte (0: not a lead). */
static const uint8_t len_of[16] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 3, 4};

size_t utf8_decode(const char *str, size_t n, uint32_t *cp)
{
    static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000}; /* shorter forms: overlong */
    const unsigned char *s = (const unsigned char *)str;
    if (n == 0) return 0;
    size_t len = s[0] > 0xF4 ? 0 : len_of[s[0] >> 4];
    if (!len || n < len) return 0;
    uint32_t c = len == 1 ? s[0] : s[0] & (0x7Fu >> len);
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        c = c << 6 | (s[k] & 0x3Fu);
    }
    if (c < least[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
    *cp = c;
    return len;
}

bool utf8_partial(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    if (n == 0 || s[0] < 0xC2 || s[0] > 0xF4 || n >= len_of[s[0] >> 4]) return false;
    for (size_t k = 1; k < n; k++)
        if ((s[k] & 0xC0) != 0x80) return false;
    return true;
}

bool utf8_valid(const char *s)
{
    size_t n = strlen(s);
    uint32_t cp;
    for (size_t i = 0, k; i < n; i += k)
        if (!(k = utf8_decode(s + i, n - i, &cp))) return false;
    return true;
}
