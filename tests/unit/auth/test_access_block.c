/* Unit tests: access-log blocks in binary COPY format and the records they
 * refuse (services/auth/access_block.c). The COPY data is read back by a
 * small reader written here from PostgreSQL's description of the format;
 * that PostgreSQL accepts it is the integration tests' part. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "services/auth/access_block.h"

#include <stdlib.h>
#include <string.h>

static Tessera__V1__ApiAccess rec(const char *key, const char *user, const char *path,
                                  int64_t at_ms, int32_t status, int64_t latency)
{
    Tessera__V1__ApiAccess a = TESSERA__V1__API_ACCESS__INIT;
    a.access_key = (char *)key;
    a.user_id = (char *)user;
    a.client_addr = (char *)"127.0.0.1:5000";
    a.method = (char *)"GET";
    a.path = (char *)path;
    a.status = status;
    a.latency_us = latency;
    a.request_id = (char *)"req";
    a.occurred_at_ms = at_ms;
    return a;
}

static void test_invalid_records(void **state)
{
    (void)state;
    Tessera__V1__ApiAccess a = rec("AK", "u", "/p", 1795304401007, 200, 5);
    assert_null(access_record_invalid(&a));
    a.method = (char *)"";
    assert_string_equal(access_record_invalid(&a), "ApiAccess without a method");
    a.method = (char *)"GET";
    a.occurred_at_ms = ACCESS_TIME_MIN_MS;
    assert_null(access_record_invalid(&a));
    a.occurred_at_ms = ACCESS_TIME_MIN_MS - 1;
    assert_non_null(strstr(access_record_invalid(&a), "out of range"));
    a.occurred_at_ms = ACCESS_TIME_END_MS - 1;
    assert_null(access_record_invalid(&a));
    a.occurred_at_ms = ACCESS_TIME_END_MS;
    assert_non_null(access_record_invalid(&a));
    a.occurred_at_ms = INT64_MIN;
    assert_non_null(access_record_invalid(&a));
    a.occurred_at_ms = INT64_MAX;
    assert_non_null(access_record_invalid(&a));
    a.occurred_at_ms = 0;
    /* Each text field, not UTF-8: a stray continuation byte, an overlong
     * '/', a surrogate, a truncated sequence. */
    static const char *const bad[] = {"\x80", "\xc0\xaf", "\xed\xa0\x80", "ok\xe2\x82"};
    for (size_t i = 0; i < 4; i++) {
        static const size_t fields[] = {
            offsetof(Tessera__V1__ApiAccess, access_key), offsetof(Tessera__V1__ApiAccess, user_id),
            offsetof(Tessera__V1__ApiAccess, client_addr), offsetof(Tessera__V1__ApiAccess, path),
            offsetof(Tessera__V1__ApiAccess, request_id)};
        for (size_t f = 0; f < 5; f++) {
            Tessera__V1__ApiAccess b = a;
            *(char **)((char *)&b + fields[f]) = (char *)bad[i];
            assert_string_equal(access_record_invalid(&b), "a text field is not valid UTF-8");
        }
    }
    a.path = (char *)"/caf\xc3\xa9 \xf0\x9f\x98\x80";
    assert_null(access_record_invalid(&a));
}

/* ---- a reader of the COPY data ---------------------------------------------------- */

typedef struct reader {
    const uint8_t *p;
    size_t len, at;
} reader;

static uint64_t be(reader *r, int bytes)
{
    assert_true(r->at + (size_t)bytes <= r->len);
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | r->p[r->at++];
    return v;
}

/* A field: its length and where its bytes start. */
static size_t field(reader *r, size_t *start)
{
    uint32_t n = (uint32_t)be(r, 4);
    assert_true(n != 0xFFFFFFFFu); /* never NULL */
    *start = r->at;
    assert_true(r->at + n <= r->len);
    r->at += n;
    return n;
}

/* An array field's elements (each a copy, NUL-terminated), after checking
 * its header: one dimension from 1 (none when empty), no NULLs, elem OID. */
static size_t array(reader *r, uint32_t oid, char ***out)
{
    size_t start, n = field(r, &start);
    reader a = {r->p + start, n, 0};
    uint32_t ndim = (uint32_t)be(&a, 4);
    assert_int_equal(be(&a, 4), 0);
    assert_int_equal(be(&a, 4), oid);
    size_t count = 0;
    if (ndim) {
        assert_int_equal(ndim, 1);
        count = (size_t)be(&a, 4);
        assert_int_equal(be(&a, 4), 1);
    }
    *out = calloc(count + 1, sizeof(char *));
    for (size_t i = 0; i < count; i++) {
        size_t s, len = field(&a, &s);
        (*out)[i] = calloc(1, len + 1);
        memcpy((*out)[i], a.p + s, len);
    }
    assert_int_equal(a.at, a.len); /* nothing after the elements */
    return count;
}

static void free_array(char **v)
{
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

static int64_t be64(const char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | (uint8_t)p[i];
    return (int64_t)v;
}

/* Long: one encoded COPY stream read field by field in order; the reader's position is the test's
 * state. */
static void test_copy_format(void **state)
{
    (void)state;
    /* 2026-11-22T00:00:00.007Z and one ms before the Unix epoch. */
    Tessera__V1__ApiAccess r[3] = {rec("KB", "u1", "/a\tb\"\\", 1795305600007, 200, 12),
                                   rec("", "u1", "/caf\xc3\xa9", -1, 404, -3),
                                   rec("KA", "", "/c", 1795305600000, 599, 0)};
    const Tessera__V1__ApiAccess *recs[] = {&r[0], &r[1], &r[2]};
    const char *ids[] = {"019aa7c1-3f2e-8abc-9def-0123456789ab",
                         "019AA7C1-3F2E-8ABC-9DEF-0123456789AA",
                         "00000000-0000-0000-0000-000000000000"};
    copy_bin b = {0};
    access_copy_begin(&b);
    access_copy_block(&b, "FFEEDDCC-BBAA-4988-7766-554433221100", "gateway/a", recs, ids, 3);
    access_copy_block(&b, "00112233-4455-4677-8899-aabbccddeeff", "", recs + 2, ids + 2, 1);
    access_copy_end(&b);

    reader rd = {b.p, b.len, 0};
    static const uint8_t sig[11] = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', 0xFF, '\r', '\n', 0};
    assert_memory_equal(b.p, sig, 11);
    rd.at = 11;
    assert_int_equal(be(&rd, 4), 0);
    assert_int_equal(be(&rd, 4), 0);

    /* Block 1. */
    assert_int_equal(be(&rd, 2), 19);
    size_t s;
    assert_int_equal(field(&rd, &s), 16);
    static const uint8_t id1[16] = {0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x49, 0x88,
                                    0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00};
    assert_memory_equal(b.p + s, id1, 16);
    /* first_at: -1 ms is 2000-01-01 minus 946684800001 ms, in microseconds. */
    assert_int_equal(field(&rd, &s), 8);
    assert_int_equal(be64((const char *)b.p + s), INT64_C(-946684800001000));
    assert_int_equal(field(&rd, &s), 8);
    assert_int_equal(be64((const char *)b.p + s), INT64_C(848620800007000));
    assert_int_equal(field(&rd, &s), 4);
    assert_int_equal(b.p[s + 3], 3);
    assert_int_equal(field(&rd, &s), 9);
    assert_memory_equal(b.p + s, "gateway/a", 9);

    char **v;
    assert_int_equal(array(&rd, 25, &v), 2); /* keys seen: sorted, the empty one left out */
    assert_string_equal(v[0], "KA");
    assert_string_equal(v[1], "KB");
    free_array(v);
    assert_int_equal(array(&rd, 23, &v), 2); /* how many records hold each */
    assert_memory_equal(v[0], "\x00\x00\x00\x01", 4);
    assert_memory_equal(v[1], "\x00\x00\x00\x01", 4);
    free_array(v);
    assert_int_equal(array(&rd, 25, &v), 1); /* users seen */
    assert_string_equal(v[0], "u1");
    free_array(v);
    assert_int_equal(array(&rd, 23, &v), 1);
    assert_memory_equal(v[0], "\x00\x00\x00\x02", 4);
    free_array(v);
    assert_int_equal(array(&rd, 2950, &v), 3); /* ids, either case in */
    assert_memory_equal(v[0], "\x01\x9a\xa7\xc1\x3f\x2e\x8a\xbc\x9d\xef\x01\x23\x45\x67\x89\xab",
                        16);
    assert_memory_equal(v[1], "\x01\x9a\xa7\xc1\x3f\x2e\x8a\xbc\x9d\xef\x01\x23\x45\x67\x89\xaa",
                        16);
    free_array(v);
    assert_int_equal(array(&rd, 1184, &v), 3);
    assert_int_equal(be64(v[0]), INT64_C(848620800007000));
    assert_int_equal(be64(v[1]), INT64_C(-946684800001000));
    free_array(v);
    static const char *const want[5][3] = {{"KB", "", "KA"},
                                           {"u1", "u1", ""},
                                           {"127.0.0.1:5000", "127.0.0.1:5000", "127.0.0.1:5000"},
                                           {"GET", "GET", "GET"},
                                           {"/a\tb\"\\", "/caf\xc3\xa9", "/c"}};
    for (int f = 0; f < 5; f++) {
        assert_int_equal(array(&rd, 25, &v), 3);
        for (int i = 0; i < 3; i++)
            assert_string_equal(v[i], want[f][i]);
        free_array(v);
    }
    assert_int_equal(array(&rd, 23, &v), 3);
    assert_memory_equal(v[1], "\x00\x00\x01\x94", 4);
    free_array(v);
    assert_int_equal(array(&rd, 20, &v), 3);
    assert_int_equal(be64(v[1]), -3);
    assert_int_equal(be64(v[0]), 12);
    free_array(v);
    assert_int_equal(array(&rd, 25, &v), 3);
    assert_string_equal(v[2], "req");
    free_array(v);

    /* Block 2: one record, no user: empty arrays (no dimensions). */
    assert_int_equal(be(&rd, 2), 19);
    for (int f = 0; f < 4; f++)
        field(&rd, &s);
    assert_int_equal(field(&rd, &s), 0); /* producer "" */
    assert_int_equal(array(&rd, 25, &v), 1);
    free_array(v);
    assert_int_equal(array(&rd, 23, &v), 1);
    free_array(v);
    assert_int_equal(array(&rd, 25, &v), 0);
    free_array(v);
    assert_int_equal(array(&rd, 23, &v), 0);
    free_array(v);
    for (int f = 0; f < 10; f++)
        field(&rd, &s);
    assert_int_equal(be(&rd, 2), 0xFFFF); /* the trailer, then nothing */
    assert_int_equal(rd.at, b.len);
    free(b.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invalid_records),
        cmocka_unit_test(test_copy_format),
    };
    return cmocka_run_group_tests_name("auth_access_block", tests, NULL, NULL);
}
