/* test_config_key.c: the configuration store's key syntax
 * (services/registry/config_store.h): segments, the trailing "/", limits,
 * the families, and a registry name written as the SDK encodes it. */
#include "services/registry/config_store.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

static int split(const char *key, char **segs)
{
    static char buf[CONFIG_KEY_MAX + 2];
    int n = -1;
    ts_err err = {{0}};
    if (!config_key_split(key, buf, sizeof(buf), segs, &n, &err)) return -1;
    return n;
}

static void test_good_keys(void **state)
{
    (void)state;
    char *segs[CONFIG_SEGMENTS_MAX];
    assert_int_equal(split("config/a/b", segs), 3);
    assert_string_equal(segs[2], "b");
    /* the SDK's image.get ends its key with "/" */
    assert_int_equal(split("images/r%3A5000/x/latest/resource/", segs), 5);
    assert_string_equal(segs[4], "resource");
    assert_string_equal(segs[1], "r%3A5000"); /* image keys decode later */
    assert_int_equal(split("config/docker/registry/host%3A5000", segs), 4);
    assert_string_equal(segs[3], "host:5000");
    assert_int_equal(split("config", segs), 1);
}

static void test_bad_keys(void **state)
{
    (void)state;
    char *segs[CONFIG_SEGMENTS_MAX];
    const char *bad[] = {"",
                         "/",
                         "config//a",
                         "/config",
                         "config/a b",
                         "config/\xc3\xa9",
                         "config/a\tb",
                         "etc/x",
                         "configx/y",
                         "images2"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(split(bad[i], segs), -1);
    char longkey[400] = "config/";
    memset(longkey + 7, 'a', 300);
    longkey[307] = '\0';
    assert_int_equal(split(longkey, segs), -1);
    longkey[CONFIG_KEY_MAX] = '\0'; /* exactly the limit */
    assert_int_equal(split(longkey, segs), 2);
    char deep[CONFIG_KEY_MAX + 1] = "config";
    for (int i = 0; i < CONFIG_SEGMENTS_MAX; i++)
        strcat(deep, "/a");
    assert_int_equal(split(deep, segs), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_keys),
        cmocka_unit_test(test_bad_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
