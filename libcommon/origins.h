/* origins.h: lists of web origins in configuration ("https://a.example,
 * http://b.example:8080"), as CORS (tessera-vfolder's transfers) and the
 * console's login (the gateway) read them: entries separated by commas,
 * spaces around them and one trailing '/' ignored, compared without regard
 * to case. */
#ifndef TESSERA_ORIGINS_H
#define TESSERA_ORIGINS_H

#include "libcommon/common.h"

/* Whether origin is in list (NULL or blank: in none). With star, an entry
 * "*" matches every origin (also a NULL one). */
bool origins_listed(const char *list, const char *origin, bool star) TS_MUST_CHECK;

/* Whether list is NULL, blank or only commas and spaces. */
bool origins_blank(const char *list) TS_MUST_CHECK;

#endif
