/* test_utf8.c: the one UTF-8 decoder (libcommon/utf8.h): characters of one
 * to four bytes and their code points; overlong forms, surrogates, code
 * points past U+10FFFF, stray continuation bytes and bytes never used in
 * UTF-8 refused; a character cut short by the end of the bytes told apart
 * from a broken one; whole strings checked. */
#include "libcommon/utf8.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

static size_t decode(const char *s, uint32_t *cp)
{
    return utf8_decode(s, strlen(s), cp);
}

static void test_decode_valid(void **state)
{
    (void)state;
    uint32_t cp = 0;
    assert_int_equal(decode("A", &cp), 1);
    assert_int_equal(cp, 0x41);
    assert_int_equal(decode("\xC3\xA9", &cp), 2); /* é */
    assert_int_equal(cp, 0xE9);
    assert_int_equal(decode("\xE2\x82\xAC!", &cp), 3); /* € */
    assert_int_equal(cp, 0x20AC);
    assert_int_equal(decode("\xF0\x9F\x98\x80", &cp), 4); /* U+1F600 */
    assert_int_equal(cp, 0x1F600);
    assert_int_equal(decode("\xF4\x8F\xBF\xBF", &cp), 4); /* the last code point */
    assert_int_equal(cp, 0x10FFFF);
    assert_int_equal(decode("\xED\x9F\xBF", &cp), 3); /* just below the surrogates */
    assert_int_equal(utf8_decode("\0", 1, &cp), 1);
    assert_int_equal(cp, 0);
}

static void test_decode_refused(void **state)
{
    (void)state;
    uint32_t cp = 0x1234;
    const char *bad[] = {
        "\x80",             /* a continuation byte alone */
        "\xC0\x80",         /* overlong NUL */
        "\xC1\xBF",         /* overlong */
        "\xE0\x80\xAF",     /* overlong '/' */
        "\xF0\x80\x80\xAF", /* overlong '/' */
        "\xED\xA0\x80",     /* a surrogate */
        "\xED\xBF\xBF",     /* a surrogate */
        "\xF4\x90\x80\x80", /* past U+10FFFF */
        "\xF5\x80\x80\x80", /* never a lead byte */
        "\xFF",
        "\xC3(", /* a lead without its continuation */
        "\xE2\x82(",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (decode(bad[i], &cp) != 0) fail_msg("case %zu decoded", i);
    }
    assert_int_equal(cp, 0x1234);                             /* untouched */
    assert_int_equal(utf8_decode("\xE2\x82\xAC", 2, &cp), 0); /* cut by n */
    assert_int_equal(utf8_decode("", 0, &cp), 0);
}

static void test_partial(void **state)
{
    (void)state;
    assert_true(utf8_partial("\xE2\x82", 2));
    assert_true(utf8_partial("\xF0", 1));
    assert_true(utf8_partial("\xF0\x9F\x98", 3));
    assert_false(utf8_partial("\xE2\x82\xAC", 3)); /* whole */
    assert_false(utf8_partial("\xE2(", 2));        /* broken, not cut */
    assert_false(utf8_partial("\xC0", 1));         /* never valid */
    assert_false(utf8_partial("\xF5", 1));
    assert_false(utf8_partial("\x80", 1));
    assert_false(utf8_partial("A", 1));
    assert_false(utf8_partial("", 0));
}

static void test_valid_strings(void **state)
{
    (void)state;
    assert_true(utf8_valid(""));
    assert_true(utf8_valid("plain ascii"));
    assert_true(utf8_valid("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
    assert_false(utf8_valid("caf\xC3"));
    assert_false(utf8_valid("a\xC0\x80z"));
    assert_false(utf8_valid("\xED\xA0\x80"));
    assert_false(utf8_valid("ok then \x80"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_valid),
        cmocka_unit_test(test_decode_refused),
        cmocka_unit_test(test_partial),
        cmocka_unit_test(test_valid_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
