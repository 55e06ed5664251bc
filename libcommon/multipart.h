/* multipart.h: a buffered multipart/form-data body (RFC 7578) split into
 * its parts, for the vfolder legacy upload (services/vfolder/upload_form.c) and the agent's
 * session upload (services/agent/kernel_files.c). The body is the whole
 * request body already in memory (http.max_body bounds it); the parts point
 * into it, nothing is copied but the names.
 *
 *     mp_part parts[MP_MAX_PARTS];
 *     size_t n;
 *     char why[128];
 *     if (mp_parse(content_type, body, len, parts, MP_MAX_PARTS, &n, why, sizeof(why)) != MP_OK)
 *         ... 400 or 415 with why ...
 *     ... parts[i].name, parts[i].filename (NULL for a plain field), data, len ...
 *     mp_free(parts, n);
 */
#ifndef LIBCOMMON_MULTIPART_H
#define LIBCOMMON_MULTIPART_H

#include "libcommon/common.h"

#include <stddef.h>

#define MP_MAX_PARTS 100

typedef struct mp_part {
    char *name;       /* the form field's name (heap) */
    char *filename;   /* its filename parameter (heap), NULL when absent */
    const char *data; /* into the body */
    size_t len;
} mp_part;

typedef enum mp_rc {
    MP_OK = 0,
    MP_NOT_MULTIPART, /* the media type is not multipart/form-data (415) */
    MP_MALFORMED,     /* no boundary, a part without its delimiter or headers (400) */
    MP_TOO_MANY,      /* more than max parts (400) */
} mp_rc;

/* Split body (len bytes) of the given Content-Type into at most max parts
 * (*n of them). Not OK: why says what is wrong, no part is left to free. */
mp_rc mp_parse(const char *content_type, const char *body, size_t len, mp_part *parts, size_t max,
               size_t *n, char *why, size_t why_size) TS_MUST_CHECK;
void mp_free(mp_part *parts, size_t n);

#endif
