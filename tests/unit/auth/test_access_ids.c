/* Unit tests: the ids of an ApiAccessBatch's records (services/auth/access_ids.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "services/auth/access_ids.h"

#include <stdlib.h>
#include <string.h>

#define BATCH "019aa7c1-3f2e-7abc-9def-0123456789ab"

static int cmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

static void test_shape_and_known_values(void **state)
{
    (void)state;
    char id[TS_UUID_STRLEN];
    assert_true(access_record_id(BATCH, 0, id));
    assert_string_equal(id, "019aa7c1-3f2e-8abc-9def-0123456789ab");
    assert_true(access_record_id(BATCH, 1, id));
    assert_string_equal(id, "019aa7c1-3f2e-8abc-9def-0123456789aa");
    assert_true(access_record_id(BATCH, 0xffff, id));
    assert_string_equal(id, "019aa7c1-3f2e-8abc-9def-012345677654");
    assert_true(access_record_id(BATCH, ACCESS_RECORD_INDEX_MAX - 1, id));
    assert_string_equal(id, "019aa7c1-3f2e-8abc-9def-fedcba987654");
    assert_true(ts_uuid_valid(id));
    /* Upper-case text gives the same id. */
    assert_true(access_record_id("019AA7C1-3F2E-7ABC-9DEF-0123456789AB", 1, id));
    assert_string_equal(id, "019aa7c1-3f2e-8abc-9def-0123456789aa");
}

/* Deterministic, distinct within a batch, the batch's time prefix kept,
 * never the batch id itself (version 8). */
static void test_distinct_and_stable(void **state)
{
    (void)state;
    enum { N = 10000 };
    char(*ids)[TS_UUID_STRLEN] = calloc(N, TS_UUID_STRLEN);
    char batch[TS_UUID_STRLEN];
    ts_uuid7(batch);
    for (int i = 0; i < N; i++) {
        assert_true(access_record_id(batch, (uint64_t)i, ids[i]));
        char again[TS_UUID_STRLEN];
        assert_true(access_record_id(batch, (uint64_t)i, again));
        assert_string_equal(again, ids[i]);
        assert_memory_equal(ids[i], batch, 14);
        assert_int_equal(ids[i][14], '8');
        assert_string_not_equal(ids[i], batch);
    }
    qsort(ids, N, TS_UUID_STRLEN, cmp);
    for (int i = 1; i < N; i++)
        assert_string_not_equal(ids[i - 1], ids[i]);
    free(ids);
}

static void test_bad_input(void **state)
{
    (void)state;
    char id[TS_UUID_STRLEN];
    assert_false(access_record_id("", 0, id));
    assert_false(access_record_id("not-a-uuid", 0, id));
    assert_false(access_record_id("019aa7c1-3f2e-7abc-9def-0123456789ax", 0, id));
    assert_false(access_record_id("019aa7c1-3f2e-7abc-9def-0123456789ab0", 0, id));
    assert_false(access_record_id(NULL, 0, id));
    assert_false(access_record_id(BATCH, ACCESS_RECORD_INDEX_MAX, id));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shape_and_known_values),
        cmocka_unit_test(test_distinct_and_stable),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests_name("auth_access_ids", tests, NULL, NULL);
}
