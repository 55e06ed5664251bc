/* test_uuid.c: the UUID helpers of common.c: the dashed form's check and
 * the normalisation of dashed and undashed (uuid.hex) ids. */
#include "libcommon/common.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

static void test_valid(void **state)
{
    (void)state;
    assert_true(ts_uuid_valid("0b7e1d2a-1c3f-4a5b-8c9d-0e1f2a3b4c5d"));
    assert_false(ts_uuid_valid("0b7e1d2a1c3f4a5b8c9d0e1f2a3b4c5d"));
    assert_false(ts_uuid_valid(NULL));
}

static void test_normalize_both_forms(void **state)
{
    (void)state;
    char out[TS_UUID_STRLEN];
    assert_true(ts_uuid_normalize("0b7e1d2a-1c3f-4a5b-8c9d-0e1f2a3b4c5d", out));
    assert_string_equal(out, "0b7e1d2a-1c3f-4a5b-8c9d-0e1f2a3b4c5d");
    assert_true(ts_uuid_normalize("0B7E1D2A1C3F4A5B8C9D0E1F2A3B4C5D", out));
    assert_string_equal(out, "0b7e1d2a-1c3f-4a5b-8c9d-0e1f2a3b4c5d");
    assert_true(ts_uuid_normalize("0B7E1D2A-1C3F-4A5B-8C9D-0E1F2A3B4C5D", out));
    assert_string_equal(out, "0b7e1d2a-1c3f-4a5b-8c9d-0e1f2a3b4c5d");
}

static void test_normalize_refusals(void **state)
{
    (void)state;
    char out[TS_UUID_STRLEN];
    static const char *const bad[] = {
        NULL,
        "",
        "data",
        "0b7e1d2a1c3f4a5b8c9d0e1f2a3b4c5",             /* 31 */
        "0b7e1d2a1c3f4a5b8c9d0e1f2a3b4c5d0",           /* 33 */
        "0b7e1d2a1c3f4a5b8c9d0e1f2a3b4c5g",            /* not hex */
        "0b7e1d2a-1c3f4a5b8c9d0e1f2a3b4c5",            /* 32 with a dash */
        "0b7e1d2a1c3f-4a5b-8c9d-0e1f2a3b4c5d-",        /* 36, dashes misplaced */
        "0b7e1d2a-1c3f-4a5b-8c9d-0e1f2a3b4c5z",        /* 36, not hex */
        "0b7e1d2a-1c3f-4a5b-8c9d-0e1f2a3b4c5d/../etc", /* longer */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(out, 'x', sizeof(out));
        assert_false(ts_uuid_normalize(bad[i], out));
        assert_string_equal(out, "");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_normalize_both_forms),
        cmocka_unit_test(test_normalize_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
