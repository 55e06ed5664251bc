/* buf.c: see buf.h. */
#include "libcommon/buf.h"

#include <stdlib.h>
#include <string.h>

void ts_buf_reserve(ts_buf *b, size_t extra)
{
    if (b->data && b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + extra + 1)
        cap *= 2;
    b->data = ts_realloc(b->data, cap);
    b->cap = cap;
}

void ts_buf_append(ts_buf *b, const void *data, size_t n)
{
    ts_buf_reserve(b, n);
    if (n) memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void ts_buf_append_str(ts_buf *b, const char *s)
{
    ts_buf_append(b, s, strlen(s));
}

char *ts_buf_steal(ts_buf *b, size_t *len)
{
    if (!b->data) {
        ts_buf_reserve(b, 0);
        b->data[0] = '\0';
    }
    char *out = b->data;
    if (len) *len = b->len;
    *b = (ts_buf){0};
    return out;
}

void ts_buf_free(ts_buf *b)
{
    free(b->data);
    *b = (ts_buf){0};
}
