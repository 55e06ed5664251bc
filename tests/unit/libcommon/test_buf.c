/* test_buf.c: buf.c, the growable NUL-terminated byte buffer. */
#include "libcommon/buf.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

static void test_append_grows_and_terminates(void **state)
{
    (void)state;
    ts_buf b = {0};
    char chunk[700];
    memset(chunk, 'x', sizeof(chunk));
    for (int i = 0; i < 10; i++)
        ts_buf_append(&b, chunk, sizeof(chunk));
    assert_int_equal(b.len, 7000);
    assert_true(b.cap > b.len);
    assert_int_equal(b.data[b.len], '\0');
    assert_int_equal(strspn(b.data, "x"), 7000);
    ts_buf_append_str(&b, "end");
    assert_string_equal(b.data + 7000, "end");
    ts_buf_free(&b);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
}

static void test_binary_and_steal(void **state)
{
    (void)state;
    ts_buf b = {0};
    ts_buf_append(&b, "a\0b", 3);
    size_t len = 0;
    char *s = ts_buf_steal(&b, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(s, "a\0b", 4); /* the NUL after the data too */
    assert_null(b.data);
    free(s);
    /* nothing appended: an empty string, not NULL */
    s = ts_buf_steal(&b, &len);
    assert_non_null(s);
    assert_int_equal(len, 0);
    assert_string_equal(s, "");
    free(s);
}

static void test_reserve_keeps_content(void **state)
{
    (void)state;
    ts_buf b = {0};
    ts_buf_append_str(&b, "keep");
    ts_buf_reserve(&b, 1 << 20);
    assert_true(b.cap >= b.len + (1 << 20) + 1);
    assert_string_equal(b.data, "keep");
    ts_buf_append(&b, "", 0);
    assert_string_equal(b.data, "keep");
    ts_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_grows_and_terminates),
        cmocka_unit_test(test_binary_and_steal),
        cmocka_unit_test(test_reserve_keeps_content),
    };
    return cmocka_run_group_tests_name("buf", tests, NULL, NULL);
}
