/* utf8.c: strict UTF-8 checking (utf8.h). */
#include "utf8.h"

bool auth_utf8_valid(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    while (*s) {
        unsigned c = *s;
        int n = c < 0x80             ? 0
                : (c & 0xE0) == 0xC0 ? 1
                : (c & 0xF0) == 0xE0 ? 2
                : (c & 0xF8) == 0xF0 ? 3
                                     : -1;
        if (n < 0 || (n == 1 && c < 0xC2) || (n == 3 && c > 0xF4)) return false;
        unsigned cp = n == 0 ? c : c & (0x3F >> n);
        for (int i = 1; i <= n; i++) {
            if ((s[i] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (s[i] & 0x3F);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return false;
        s += n + 1;
    }
    return true;
}
