/* utf8.h: the one UTF-8 decoder of the tree, strict as RFC 3629 asks (no
 * overlong forms, no surrogates, nothing past U+10FFFF), over bytes with a
 * length: tessera-auth's text checks, the gateway's GraphQL source and
 * execute-stream output, the agent's kernel output as JSON. */
#ifndef TESSERA_UTF8_H
#define TESSERA_UTF8_H

#include "libcommon/common.h"

/* The character at s (n bytes left) into *cp: its length in bytes (1 to 4),
 * or 0 when the bytes there are no valid character (or n cuts it short). */
size_t utf8_decode(const char *s, size_t n, uint32_t *cp);
/* Whether s[0..n) is a character cut short: a lead byte that needs more than
 * n bytes, followed only by continuation bytes (the end of a read). */
bool utf8_partial(const char *s, size_t n) TS_MUST_CHECK;
/* Whether the NUL-terminated s is valid UTF-8 throughout. */
bool utf8_valid(const char *s) TS_MUST_CHECK;

#endif
