/* test_origins.c: lists of web origins (libcommon/origins.h). */
#include "libcommon/origins.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

static void test_listed(void **state)
{
    (void)state;
    const char *list = " https://a.example , HTTP://B.example:8080/,,http://c";
    assert_true(origins_listed(list, "https://a.example", false));
    assert_true(origins_listed(list, "http://b.example:8080", false)); /* case, trailing / */
    assert_true(origins_listed(list, "http://c", false));
    assert_false(origins_listed(list, "https://a.example.evil", false));
    assert_false(origins_listed(list, "https://a.exampl", false));
    assert_false(origins_listed(list, "http://b.example", false));
    assert_false(origins_listed(list, "", false));
    assert_false(origins_listed(list, NULL, false));
    assert_false(origins_listed(NULL, "http://c", false));
    assert_false(origins_listed("", "http://c", false));
}

static void test_star(void **state)
{
    (void)state;
    assert_true(origins_listed("http://a, *", "http://other", true));
    assert_true(origins_listed("*", NULL, true));
    /* without star, "*" is no wildcard (the console's login allows none) */
    assert_false(origins_listed("http://a, *", "http://other", false));
    assert_false(origins_listed("*", "*x", false));
}

static void test_blank(void **state)
{
    (void)state;
    assert_true(origins_blank(NULL));
    assert_true(origins_blank(""));
    assert_true(origins_blank(" , ,\t"));
    assert_false(origins_blank("http://a"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listed),
        cmocka_unit_test(test_star),
        cmocka_unit_test(test_blank),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
