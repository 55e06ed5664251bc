/* access_block.c: access-log blocks in binary COPY format (access_block.h).
 * The format (PostgreSQL's "COPY ... (FORMAT binary)"): a signature and two
 * zero words, then per row a 16-bit field count and each field as a 32-bit
 * length and its bytes, then -1; every integer big-endian. An array field is
 * its dimension count, a has-nulls flag, the element type's OID, per
 * dimension its length and lower bound, then each element as length and
 * bytes. A timestamptz is microseconds since 2000-01-01 UTC; a uuid its 16
 * bytes; text its UTF-8 bytes. */
#include "access_block.h"

#include "libcommon/utf8.h"

#include <stdlib.h>
#include <string.h>

/* Element type OIDs (pg_type.dat; fixed since PostgreSQL 7). */
#define OID_INT8 20
#define OID_INT4 23
#define OID_TEXT 25
#define OID_TIMESTAMPTZ 1184
#define OID_UUID 2950

#define COPY_FIELDS 19
#define PG_EPOCH_MS INT64_C(946684800000) /* 2000-01-01T00:00:00Z in Unix ms */

const char *access_record_invalid(const Tessera__V1__ApiAccess *a)
{
    if (!a->method || !a->method[0]) return "ApiAccess without a method";
    if (a->occurred_at_ms < ACCESS_TIME_MIN_MS || a->occurred_at_ms >= ACCESS_TIME_END_MS)
        return "occurred_at_ms out of range (years 1 to 9999)";
    const char *const text[] = {a->access_key, a->user_id, a->client_addr,
                                a->method,     a->path,    a->request_id};
    for (size_t i = 0; i < TS_ARRAY_LEN(text); i++)
        if (text[i] && !utf8_valid(text[i])) return "a text field is not valid UTF-8";
    return NULL;
}

/* ---- bytes -------------------------------------------------------------------- */

static uint8_t *reserve(copy_bin *b, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (b->len + n > cap)
            cap *= 2;
        b->p = ts_realloc(b->p, cap);
        b->cap = cap;
    }
    uint8_t *at = b->p + b->len;
    b->len += n;
    return at;
}

static void put_be(copy_bin *b, uint64_t v, int bytes)
{
    uint8_t *p = reserve(b, (size_t)bytes);
    for (int i = bytes - 1; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static void put_bytes(copy_bin *b, const void *p, size_t n)
{
    if (n) memcpy(reserve(b, n), p, n);
}

/* A field whose length is written once its bytes are: the offset of the
 * length word. */
static size_t field_open(copy_bin *b)
{
    size_t at = b->len;
    reserve(b, 4);
    return at;
}

static void field_close(copy_bin *b, size_t at)
{
    uint64_t n = b->len - at - 4;
    for (int i = 3; i >= 0; i--, n >>= 8)
        b->p[at + (size_t)i] = (uint8_t)n;
}

static void put_text(copy_bin *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    put_be(b, n, 4);
    put_bytes(b, s, n);
}

static void put_uuid(copy_bin *b, const char *text)
{
    uint8_t *p = reserve(b, 16);
    int k = 0;
    for (const char *c = text; *c && k < 32; c++) {
        if (*c == '-') continue;
        int v = *c <= '9' ? *c - '0' : (*c | 0x20) - 'a' + 10;
        if (k % 2 == 0)
            p[k / 2] = (uint8_t)(v << 4);
        else
            p[k / 2] |= (uint8_t)v;
        k++;
    }
}

static uint64_t pg_time(int64_t ms)
{
    return (uint64_t)((ms - PG_EPOCH_MS) * 1000);
}

/* An array's header: one dimension of n elements (none when n is 0). */
static void array_head(copy_bin *b, uint32_t oid, size_t n)
{
    put_be(b, n ? 1 : 0, 4);
    put_be(b, 0, 4);
    put_be(b, oid, 4);
    if (n) {
        put_be(b, n, 4);
        put_be(b, 1, 4);
    }
}

/* ---- fields ------------------------------------------------------------------- */

enum rec_field { F_ACCESS_KEY, F_USER_ID, F_CLIENT_ADDR, F_METHOD, F_PATH, F_REQUEST_ID };

static const char *rec_text(const Tessera__V1__ApiAccess *a, enum rec_field f)
{
    switch (f) {
    case F_ACCESS_KEY:
        return a->access_key;
    case F_USER_ID:
        return a->user_id;
    case F_CLIENT_ADDR:
        return a->client_addr;
    case F_METHOD:
        return a->method;
    case F_PATH:
        return a->path;
    case F_REQUEST_ID:
        return a->request_id;
    }
    return NULL;
}

static void text_array(copy_bin *b, const Tessera__V1__ApiAccess *const *recs, size_t n,
                       enum rec_field f)
{
    size_t at = field_open(b);
    array_head(b, OID_TEXT, n);
    for (size_t i = 0; i < n; i++)
        put_text(b, rec_text(recs[i], f));
    field_close(b, at);
}

enum rec_int { I_OCCURRED_AT, I_STATUS, I_LATENCY };

/* Integer field f of every record as an array: timestamptz, int4 or int8. */
static void int_array(copy_bin *b, const Tessera__V1__ApiAccess *const *recs, size_t n,
                      enum rec_int f)
{
    static const struct {
        uint32_t oid;
        int width;
    } type[] = {[I_OCCURRED_AT] = {OID_TIMESTAMPTZ, 8},
                [I_STATUS] = {OID_INT4, 4},
                [I_LATENCY] = {OID_INT8, 8}};
    size_t at = field_open(b);
    array_head(b, type[f].oid, n);
    for (size_t i = 0; i < n; i++) {
        const Tessera__V1__ApiAccess *a = recs[i];
        uint64_t v = f == I_OCCURRED_AT ? pg_time(a->occurred_at_ms)
                     : f == I_STATUS    ? (uint32_t)a->status
                                        : (uint64_t)a->latency_us;
        put_be(b, (uint64_t)type[f].width, 4);
        put_be(b, v, type[f].width);
    }
    field_close(b, at);
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* The distinct non-empty values of field f as a text[] (sorted), then how
 * many records hold each as an int4[] (the same order). */
static void distinct_arrays(copy_bin *b, const Tessera__V1__ApiAccess *const *recs, size_t n,
                            enum rec_field f)
{
    const char **v = ts_malloc(n * sizeof(*v));
    uint32_t *count = ts_malloc(n * sizeof(*count));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *s = rec_text(recs[i], f);
        if (s && *s) v[k++] = s;
    }
    qsort(v, k, sizeof(*v), cmp_str);
    size_t d = 0;
    for (size_t i = 0; i < k; i++) {
        if (d && strcmp(v[d - 1], v[i]) == 0) {
            count[d - 1]++;
            continue;
        }
        v[d] = v[i];
        count[d++] = 1;
    }
    size_t at = field_open(b);
    array_head(b, OID_TEXT, d);
    for (size_t i = 0; i < d; i++)
        put_text(b, v[i]);
    field_close(b, at);
    at = field_open(b);
    array_head(b, OID_INT4, d);
    for (size_t i = 0; i < d; i++) {
        put_be(b, 4, 4);
        put_be(b, count[i], 4);
    }
    field_close(b, at);
    free(count);
    free(v);
}

void access_copy_begin(copy_bin *b)
{
    static const uint8_t signature[11] = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', 0xFF, '\r', '\n', 0};
    put_bytes(b, signature, sizeof(signature));
    put_be(b, 0, 4); /* flags: no OIDs */
    put_be(b, 0, 4); /* header extension length */
}

void access_copy_end(copy_bin *b)
{
    put_be(b, 0xFFFF, 2);
}

void access_copy_block(copy_bin *b, const char *block_id, const char *producer,
                       const Tessera__V1__ApiAccess *const *recs, const char *const *ids, size_t n)
{
    int64_t first = recs[0]->occurred_at_ms, last = first;
    for (size_t i = 1; i < n; i++) {
        if (recs[i]->occurred_at_ms < first) first = recs[i]->occurred_at_ms;
        if (recs[i]->occurred_at_ms > last) last = recs[i]->occurred_at_ms;
    }
    put_be(b, COPY_FIELDS, 2);
    put_be(b, 16, 4);
    put_uuid(b, block_id);
    put_be(b, 8, 4);
    put_be(b, pg_time(first), 8);
    put_be(b, 8, 4);
    put_be(b, pg_time(last), 8);
    put_be(b, 4, 4);
    put_be(b, n, 4);
    put_text(b, producer);
    distinct_arrays(b, recs, n, F_ACCESS_KEY);
    distinct_arrays(b, recs, n, F_USER_ID);

    size_t at = field_open(b);
    array_head(b, OID_UUID, n);
    for (size_t i = 0; i < n; i++) {
        put_be(b, 16, 4);
        put_uuid(b, ids[i]);
    }
    field_close(b, at);

    int_array(b, recs, n, I_OCCURRED_AT);
    for (enum rec_field f = F_ACCESS_KEY; f <= F_PATH; f++)
        text_array(b, recs, n, f);
    int_array(b, recs, n, I_STATUS);
    int_array(b, recs, n, I_LATENCY);
    text_array(b, recs, n, F_REQUEST_ID);
}
