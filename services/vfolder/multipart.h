/* multipart.h: a buffered multipart/form-data body (RFC 7578) split into
 * its parts, for the legacy upload (upload_form.h). The body is the whole
 * request body already in memory (http.max_body bounds it); the parts point
 * into it, nothing is copied but the names.
 *
 *     vf_mp_part parts[VF_MP_MAX_PARTS];
 *     size_t n;
 *     char why[128];
 *     if (!vf_mp_parse(content_type, body, len, parts, VF_MP_MAX_PARTS, &n, why, sizeof(why)))
 *         ... 400 or 415 with why ...
 *     ... parts[i].name, parts[i].filename (NULL for a plain field), data, len ...
 *     vf_mp_free(parts, n);
 */
#ifndef VFOLDER_MULTIPART_H
#define VFOLDER_MULTIPART_H

#include "libcommon/common.h"

#include <stddef.h>

#define VF_MP_MAX_PARTS 100

typedef struct vf_mp_part {
    char *name;       /* the form field's name (heap) */
    char *filename;   /* its filename parameter (heap), NULL when absent */
    const char *data; /* into the body */
    size_t len;
} vf_mp_part;

typedef enum vf_mp_rc {
    VF_MP_OK = 0,
    VF_MP_NOT_MULTIPART, /* the media type is not multipart/form-data (415) */
    VF_MP_MALFORMED,     /* no boundary, a part without its delimiter or headers (400) */
    VF_MP_TOO_MANY,      /* more than max parts (400) */
} vf_mp_rc;

/* Split body (len bytes) of the given Content-Type into at most max parts
 * (*n of them). Not OK: why says what is wrong, no part is left to free. */
vf_mp_rc vf_mp_parse(const char *content_type, const char *body, size_t len, vf_mp_part *parts,
                     size_t max, size_t *n, char *why, size_t why_size) TS_MUST_CHECK;
void vf_mp_free(vf_mp_part *parts, size_t n);

#endif
