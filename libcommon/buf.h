/* buf.h: a growable byte buffer, always NUL-terminated (so text can be read
 * as a C string), growing by doubling.
 *
 *   ts_buf b = {0};
 *   ts_buf_append(&b, data, n);
 *   ... b.data, b.len ...
 *   free(b.data);            // or char *s = ts_buf_steal(&b, &len)
 *
 * Allocation failure aborts (ts_realloc), as everywhere in Tessera. */
#ifndef TESSERA_BUF_H
#define TESSERA_BUF_H

#include "libcommon/common.h"

typedef struct ts_buf {
    char *data; /* NULL until the first append; then data[len] == '\0' */
    size_t len;
    size_t cap;
} ts_buf;

/* Room for extra more bytes (and the NUL) without another allocation. */
void ts_buf_reserve(ts_buf *b, size_t extra);
void ts_buf_append(ts_buf *b, const void *data, size_t n);
void ts_buf_append_str(ts_buf *b, const char *s);
/* The buffer's memory (heap, "" when nothing was appended), its length in
 * *len (may be NULL); b is empty again. */
char *ts_buf_steal(ts_buf *b, size_t *len);
void ts_buf_free(ts_buf *b);

#endif
