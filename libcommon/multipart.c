/* multipart.c: multipart/form-data bodies split into parts (multipart.h). */
#include "libcommon/multipart.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define BOUNDARY_MAX 70 /* RFC 2046 */

static mp_rc _fail(mp_rc rc, char *why, size_t why_size, const char *fmt, ...) TS_PRINTF(4, 5);
static mp_rc _fail(mp_rc rc, char *why, size_t why_size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_size, fmt, ap);
    va_end(ap);
    return rc;
}

/* The next parameter of a header value at *p ("; key=value" or
 * "; key=\"quoted\""): key and value (heap) and *p past it. False at the
 * end or on a malformed one. */
static bool _param(const char **p, const char *end, char **key, char **value)
{
    const char *s = *p;
    while (s < end && (*s == ';' || *s == ' ' || *s == '\t'))
        s++;
    if (s >= end) return false;
    const char *k = s;
    while (s < end && *s != '=' && *s != ';')
        s++;
    if (s >= end || *s != '=') return false;
    size_t klen = (size_t)(s - k);
    while (klen && (k[klen - 1] == ' ' || k[klen - 1] == '\t'))
        klen--;
    s++;
    char *v;
    if (s < end && *s == '"') {
        s++;
        v = ts_malloc((size_t)(end - s) + 1);
        size_t n = 0;
        while (s < end && *s != '"') {
            if (*s == '\\' && s + 1 < end) s++;
            v[n++] = *s++;
        }
        if (s >= end) { /* no closing quote */
            free(v);
            return false;
        }
        s++;
        v[n] = '\0';
    } else {
        const char *vs = s;
        while (s < end && *s != ';' && *s != ' ' && *s != '\t')
            s++;
        v = ts_strndup(vs, (size_t)(s - vs));
    }
    *key = ts_strndup(k, klen);
    *value = v;
    *p = s;
    return true;
}

/* The boundary of a multipart/form-data Content-Type into out. */
static mp_rc _boundary(const char *ct, char *out, char *why, size_t why_size)
{
    if (!ct) return _fail(MP_NOT_MULTIPART, why, why_size, "no Content-Type");
    size_t mlen = strcspn(ct, "; \t");
    if (mlen != 19 || strncasecmp(ct, "multipart/form-data", 19) != 0)
        return _fail(MP_NOT_MULTIPART, why, why_size,
                     "the body must be multipart/form-data, not %.*s", (int)(mlen > 64 ? 64 : mlen),
                     ct);
    const char *p = ct + mlen, *end = ct + strlen(ct);
    char *k, *v;
    out[0] = '\0';
    while (_param(&p, end, &k, &v)) {
        bool is_b = strcasecmp(k, "boundary") == 0;
        if (is_b && strlen(v) >= 1 && strlen(v) <= BOUNDARY_MAX)
            ts_strlcpy(out, v, BOUNDARY_MAX + 1);
        free(k);
        free(v);
        if (is_b) break;
    }
    if (!out[0])
        return _fail(MP_MALFORMED, why, why_size,
                     "Content-Type multipart/form-data needs a boundary of 1 to 70 characters");
    return MP_OK;
}

/* Content-Disposition: form-data; name="..."; filename="..." of one part's
 * header block [h, end). */
static bool _disposition(const char *h, const char *end, mp_part *part)
{
    while (h < end) {
        const char *eol = h;
        while (eol + 1 < end && !(eol[0] == '\r' && eol[1] == '\n'))
            eol++;
        if (eol + 1 >= end) eol = end;
        static const char cd[] = "content-disposition:";
        if ((size_t)(eol - h) > sizeof(cd) - 1 && strncasecmp(h, cd, sizeof(cd) - 1) == 0) {
            const char *p = h + sizeof(cd) - 1;
            while (p < eol && (*p == ' ' || *p == '\t'))
                p++;
            if ((size_t)(eol - p) < 9 || strncasecmp(p, "form-data", 9) != 0) return false;
            p += 9;
            char *k, *v;
            while (_param(&p, eol, &k, &v)) {
                char **slot = strcasecmp(k, "name") == 0       ? &part->name
                              : strcasecmp(k, "filename") == 0 ? &part->filename
                                                               : NULL;
                if (slot && !*slot) {
                    *slot = v;
                    v = NULL;
                }
                free(k);
                free(v);
            }
            return part->name != NULL;
        }
        h = eol + 2;
    }
    return false;
}

/* The next delimiter line in [p, end): "\r\n--boundary" followed by "--"
 * or by optional spaces and CRLF (RFC 2046; the same text followed by
 * anything else is data). NULL when there is none. */
static const char *_delimiter(const char *p, const char *end, const char *delim, size_t dlen)
{
    while (p < end) {
        const char *d = memmem(p, (size_t)(end - p), delim, dlen);
        if (!d) return NULL;
        const char *a = d + dlen;
        if (end - a >= 2 && a[0] == '-' && a[1] == '-') return d;
        while (a < end && (*a == ' ' || *a == '\t'))
            a++;
        if (end - a >= 2 && a[0] == '\r' && a[1] == '\n') return d;
        p = d + 1;
    }
    return NULL;
}

mp_rc mp_parse(const char *content_type, const char *body, size_t len, mp_part *parts, size_t max,
               size_t *n, char *why, size_t why_size)
{
    *n = 0;
    char boundary[BOUNDARY_MAX + 1];
    mp_rc rc = _boundary(content_type, boundary, why, why_size);
    if (rc != MP_OK) return rc;
    char delim[BOUNDARY_MAX + 5]; /* "\r\n--" boundary */
    int dlen = snprintf(delim, sizeof(delim), "\r\n--%s", boundary);
    const char *end = body + len;
    /* The first delimiter: at the very start, or after a preamble's CRLF. */
    const char *p;
    if (len >= (size_t)dlen - 2 && memcmp(body, delim + 2, (size_t)dlen - 2) == 0)
        p = body + dlen - 2;
    else if ((p = _delimiter(body, body + len, delim, (size_t)dlen)) != NULL)
        p += dlen;
    else
        return _fail(MP_MALFORMED, why, why_size, "the body has no part (no boundary line)");
    for (;;) {
        if (end - p >= 2 && p[0] == '-' && p[1] == '-') return MP_OK; /* the close delimiter */
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (end - p < 2 || p[0] != '\r' || p[1] != '\n') break;
        p += 2;
        const char *hend = (end - p >= 2 && p[0] == '\r' && p[1] == '\n')
                               ? p
                               : memmem(p, (size_t)(end - p), "\r\n\r\n", 4);
        if (!hend) break;
        const char *data = hend + (hend == p ? 2 : 4);
        const char *next = _delimiter(data, end, delim, (size_t)dlen);
        if (!next) break;
        if (*n == max) {
            mp_free(parts, *n);
            *n = 0;
            return _fail(MP_TOO_MANY, why, why_size, "more than %zu parts", max);
        }
        mp_part *part = &parts[*n];
        memset(part, 0, sizeof(*part));
        if (!_disposition(p, hend, part)) {
            size_t which = *n + 1;
            mp_free(parts, which);
            *n = 0;
            return _fail(MP_MALFORMED, why, why_size,
                         "part %zu has no Content-Disposition: form-data with a name", which);
        }
        part->data = data;
        part->len = (size_t)(next - data);
        (*n)++;
        p = next + dlen;
    }
    mp_free(parts, *n);
    *n = 0;
    return _fail(MP_MALFORMED, why, why_size,
                 "the body is not complete multipart/form-data (a part or the closing boundary "
                 "is missing)");
}

void mp_free(mp_part *parts, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(parts[i].name);
        free(parts[i].filename);
        parts[i].name = parts[i].filename = NULL;
    }
}
