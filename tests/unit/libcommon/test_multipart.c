/* test_multipart.c: multipart/form-data split into parts (multipart.h), as
 * the legacy upload reads it: the boundary from the Content-Type (quoted or
 * not), a preamble, several parts with and without filename, binary data
 * holding CR LF and the boundary's prefix, and every malformed form. */
#include "libcommon/multipart.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static mp_rc _parse(const char *ct, const char *body, size_t len, mp_part *parts, size_t *n)
{
    char why[160];
    return mp_parse(ct, body, len, parts, MP_MAX_PARTS, n, why, sizeof(why));
}

static void test_parts(void **state)
{
    (void)state;
    static const char body[] =
        "preamble\r\n"
        "--XyZ\r\n"
        "Content-Disposition: form-data; name=\"src\"; filename=\"a/b.txt\"\r\n"
        "Content-Type: text/plain\r\n"
        "\r\n"
        "line1\r\n--XyZ is not a delimiter here\r\n"
        "--XyZ  \r\n"
        "content-disposition: FORM-DATA; filename=\"q\\\"x\"; name=field\r\n"
        "\r\n"
        "\r\n"
        "--XyZ\r\n"
        "Content-Disposition: form-data; name=\"src\"; filename=\"bin\"\r\n"
        "\r\n"
        "\0\1\r\n"
        "--XyZ--\r\n"
        "epilogue";
    mp_part parts[MP_MAX_PARTS];
    size_t n;
    assert_int_equal(_parse("multipart/form-data; charset=utf-8; boundary=\"XyZ\"", body,
                            sizeof(body) - 1, parts, &n),
                     MP_OK);
    assert_int_equal(n, 3);
    assert_string_equal(parts[0].name, "src");
    assert_string_equal(parts[0].filename, "a/b.txt");
    assert_int_equal(parts[0].len, strlen("line1\r\n--XyZ is not a delimiter here"));
    assert_memory_equal(parts[0].data, "line1\r\n--XyZ", 12);
    assert_string_equal(parts[1].name, "field");
    assert_string_equal(parts[1].filename, "q\"x");
    assert_int_equal(parts[1].len, 0);
    assert_int_equal(parts[2].len, 2);
    assert_memory_equal(parts[2].data, "\0\1", 2);
    mp_free(parts, n);
    /* no preamble, unquoted boundary, a part without filename */
    static const char b2[] = "--b\r\nContent-Disposition: form-data; name=x\r\n\r\nv\r\n--b--";
    assert_int_equal(_parse("Multipart/Form-Data;boundary=b", b2, sizeof(b2) - 1, parts, &n),
                     MP_OK);
    assert_int_equal(n, 1);
    assert_null(parts[0].filename);
    mp_free(parts, n);
    /* only the closing delimiter: no parts */
    assert_int_equal(_parse("multipart/form-data; boundary=b", "--b--\r\n", 7, parts, &n), MP_OK);
    assert_int_equal(n, 0);
}

static void test_refused(void **state)
{
    (void)state;
    mp_part parts[MP_MAX_PARTS];
    size_t n;
    const char *ok_ct = "multipart/form-data; boundary=b";
    assert_int_equal(_parse(NULL, "", 0, parts, &n), MP_NOT_MULTIPART);
    assert_int_equal(_parse("application/json", "{}", 2, parts, &n), MP_NOT_MULTIPART);
    assert_int_equal(_parse("multipart/mixed; boundary=b", "--b--", 5, parts, &n),
                     MP_NOT_MULTIPART);
    assert_int_equal(_parse("multipart/form-data", "--b--", 5, parts, &n), MP_MALFORMED);
    assert_int_equal(_parse("multipart/form-data; boundary=\"\"", "--b--", 5, parts, &n),
                     MP_MALFORMED);
    assert_int_equal(_parse(ok_ct, "", 0, parts, &n), MP_MALFORMED);
    static const char open_end[] = "--b\r\nContent-Disposition: form-data; name=x\r\n\r\nv";
    assert_int_equal(_parse(ok_ct, open_end, sizeof(open_end) - 1, parts, &n), MP_MALFORMED);
    assert_int_equal(n, 0);
    static const char no_headers_end[] = "--b\r\nContent-Disposition: form-data; name=x\r\n";
    assert_int_equal(_parse(ok_ct, no_headers_end, sizeof(no_headers_end) - 1, parts, &n),
                     MP_MALFORMED);
    static const char no_name[] =
        "--b\r\nContent-Disposition: form-data; filename=f\r\n\r\nv\r\n--b--";
    assert_int_equal(_parse(ok_ct, no_name, sizeof(no_name) - 1, parts, &n), MP_MALFORMED);
    static const char attachment[] =
        "--b\r\nContent-Disposition: attachment; name=x\r\n\r\nv\r\n--b--";
    assert_int_equal(_parse(ok_ct, attachment, sizeof(attachment) - 1, parts, &n), MP_MALFORMED);
    static const char unquoted_end[] =
        "--b\r\nContent-Disposition: form-data; name=\"x\r\n\r\nv\r\n--b--";
    assert_int_equal(_parse(ok_ct, unquoted_end, sizeof(unquoted_end) - 1, parts, &n),
                     MP_MALFORMED);
    /* more parts than allowed */
    char many[64 * (MP_MAX_PARTS + 2)];
    size_t len = 0;
    for (int i = 0; i <= MP_MAX_PARTS; i++)
        len += (size_t)snprintf(many + len, sizeof(many) - len,
                                "--b\r\nContent-Disposition: form-data; name=s\r\n\r\nv\r\n");
    len += (size_t)snprintf(many + len, sizeof(many) - len, "--b--");
    assert_int_equal(_parse(ok_ct, many, len, parts, &n), MP_TOO_MANY);
    assert_int_equal(n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parts),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
