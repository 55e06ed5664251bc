/* test_pgjson_str.c: pgjson_str (libcommon/pgjson.h), the one reader of a
 * string member that the registry and tessera-auth use for rows and for
 * the messages they build from them: the string, or "" for a member that is
 * missing, null or not a string, and for an object that is not there. */
#include "libcommon/pgjson.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static void test_string_or_empty(void **state)
{
    (void)state;
    json_t *row = json_pack("{s:s, s:n, s:i, s:s}", "id", "k-1", "gone", "n", 3, "empty", "");
    assert_string_equal(pgjson_str(row, "id"), "k-1");
    assert_string_equal(pgjson_str(row, "empty"), "");
    assert_string_equal(pgjson_str(row, "gone"), "");
    assert_string_equal(pgjson_str(row, "n"), "");
    assert_string_equal(pgjson_str(row, "missing"), "");
    assert_string_equal(pgjson_str(NULL, "id"), "");
    json_t *arr = json_array();
    assert_string_equal(pgjson_str(arr, "id"), "");
    json_decref(arr);
    json_decref(row);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_string_or_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
