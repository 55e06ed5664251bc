/* utf8.h: strict UTF-8 checking for tessera-auth (names, access records). */
#ifndef AUTH_UTF8_H
#define AUTH_UTF8_H

#include "libcommon/common.h"

/* Strict UTF-8: no overlongs, no surrogates, nothing above U+10FFFF. */
bool auth_utf8_valid(const char *s) TS_MUST_CHECK;

#endif
