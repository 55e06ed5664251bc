/* test_image_ref.c: libcommon/image_ref.c, the OCI reference grammar. */
#include "libcommon/image_ref.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static void test_good(void **state)
{
    (void)state;
    static const char *const good[] = {
        "busybox",
        "tessera/busybox:1.36",
        "127.0.0.1:5000/tessera/busybox:1.36",
        "localhost/x",
        "localhost:5000/a/b/c",
        "registry.example.com/a__b/c-d/e.f:v1.2-rc_3",
        "cr.backend.ai/stable/python:3.9-ubuntu20.04",
        "[::1]:5000/x:y",
        "a---b/c",
        "x:_",
        "reg.example.com:443/a/b/"
        "c@sha256:872f72f53681e16e2a23a7825a78d61c8c12735dde7bb43772c7117dd7a3f251",
    };
    ts_err err = {{0}};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        if (!image_ref_valid(good[i], &err)) fail_msg("%s: %s", good[i], err.msg);
}

static void test_bad(void **state)
{
    (void)state;
    char long_tag[200], long_name[300];
    snprintf(long_tag, sizeof(long_tag), "x:%0129d", 0);
    memset(long_name, 'a', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    static const char *const bad[] = {
        "",
        "../../etc",
        "../etc",
        "..",
        "a/../b",
        "./x",
        "x/.",
        "-x",
        "x-",
        "x_",
        "a___b",
        "a..b",
        "a//b",
        "/a",
        "a/",
        "UPPER",
        "h:1/UPPER:x",
        "h:1/a:ba d",
        "h:99999/a",
        "h:/a",
        "-h.example/a",
        "h..example/a",
        ".example/a",
        "[zz]:1/a",
        "a:-x",
        "a:.x",
        "a:",
        "a@",
        "a@sha256:1234",
        "a@md5:1234",
        "a@sha256:872F72F53681E16E2A23A7825A78D61C8C12735DDE7BB43772C7117DD7A3F251",
        "a\tb",
        "a\nb",
        "caf\xc3\xa9",
        "http://x/a",
        "x?y",
        "x#y",
    };
    ts_err err = {{0}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (image_ref_valid(bad[i], &err)) fail_msg("accepted: '%s'", bad[i]);
    assert_false(image_ref_valid(long_tag, &err));
    assert_false(image_ref_valid(long_name, &err));
    assert_false(image_ref_valid(NULL, &err));
}

static void test_messages(void **state)
{
    (void)state;
    ts_err err = {{0}};
    assert_false(image_ref_valid("../../etc", &err));
    assert_non_null(strstr(err.msg, "bad registry host '..'"));
    assert_false(image_ref_valid("h:1/a:b@md5:1234", &err));
    assert_non_null(strstr(err.msg, "unsupported digest algorithm"));
    assert_false(image_ref_valid("a\x01", &err));
    assert_null(strchr(err.msg, '\x01')); /* not echoed */
}

static void test_parse(void **state)
{
    (void)state;
    image_ref r;
    ts_err err = {{0}};
    assert_true(image_ref_parse("docker.io/busybox", NULL, &r, &err));
    assert_string_equal(r.api_host, "registry-1.docker.io");
    assert_string_equal(r.repository, "library/busybox");
    assert_string_equal(r.tag, "latest");
    image_ref_free(&r);
    assert_false(image_ref_parse("tessera/busybox:latest", NULL, &r, &err));
    assert_non_null(strstr(err.msg, "names no registry"));
    assert_false(image_ref_parse("tessera/busybox:latest", "", &r, &err));
    assert_true(image_ref_parse("tessera/busybox:latest", "10.0.0.1:5000", &r, &err));
    assert_string_equal(r.registry, "10.0.0.1:5000");
    assert_string_equal(r.repository, "tessera/busybox");
    image_ref_free(&r);
    assert_false(image_ref_parse("../../etc", "10.0.0.1:5000", &r, &err));
    assert_true(image_ref_host_valid("registry.example.com:5000"));
    assert_false(image_ref_host_valid(".."));
    assert_false(image_ref_host_valid("a/b"));
    assert_false(image_ref_host_valid(""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_messages),
        cmocka_unit_test(test_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
