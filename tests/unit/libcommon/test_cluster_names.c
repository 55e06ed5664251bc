/* test_cluster_names.c: the names of a session's kernels as Backend.AI names
 * them (libcommon/cluster_names.c): main1, sub1, ...; the one-based index
 * within a role; BACKENDAI_CLUSTER_HOSTS and _REPLICAS; a name read back. */
#include "libcommon/cluster_names.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

static void test_names(void **state)
{
    (void)state;
    char b[CLUSTER_NAME_MAX];
    assert_string_equal(cluster_hostname("main", 0, b, sizeof(b)), "main1");
    assert_string_equal(cluster_hostname(NULL, 0, b, sizeof(b)), "main1");
    assert_string_equal(cluster_hostname("", 0, b, sizeof(b)), "main1");
    assert_string_equal(cluster_hostname("sub", 1, b, sizeof(b)), "sub1");
    assert_string_equal(cluster_hostname("sub", 2, b, sizeof(b)), "sub2");
    assert_string_equal(cluster_hostname("sub", 63, b, sizeof(b)), "sub63");
    assert_int_equal(cluster_role_index("main", 0), 1);
    assert_int_equal(cluster_role_index("sub", 1), 1);
    assert_int_equal(cluster_role_index("sub", 5), 5);
    assert_int_equal(cluster_role_index("sub", 0), 1); /* never 0 */
}

static void test_lists(void **state)
{
    (void)state;
    char *h = cluster_hosts(1), *r = cluster_replicas(1);
    assert_string_equal(h, "main1");
    assert_string_equal(r, "main:1");
    free(h);
    free(r);
    h = cluster_hosts(4);
    r = cluster_replicas(4);
    assert_string_equal(h, "main1,sub1,sub2,sub3");
    assert_string_equal(r, "main:1,sub:3");
    free(h);
    free(r);
    h = cluster_hosts(64);
    assert_non_null(strstr(h, ",sub63"));
    assert_null(strstr(h, "sub64"));
    free(h);
}

static void test_name_index(void **state)
{
    (void)state;
    int idx = -1;
    assert_true(cluster_name_index("main1", 3, &idx));
    assert_int_equal(idx, 0);
    assert_true(cluster_name_index("sub2", 3, &idx));
    assert_int_equal(idx, 2);
    static const char *const bad[] = {"main0", "main2", "sub0", "sub3",  "sub", "main",
                                      "sub01", "sub1x", "Sub1", "node1", "",    "sub-1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (cluster_name_index(bad[i], 3, &idx)) fail_msg("'%s' taken for a kernel name", bad[i]);
    assert_false(cluster_name_index(NULL, 3, &idx));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_lists),
        cmocka_unit_test(test_name_index),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
