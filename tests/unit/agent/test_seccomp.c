/* test_seccomp.c: the kernels' seccomp profile itself (seccomp.c), without
 * a container: default EPERM, no refused name allowed, none named twice,
 * clone/unshare/personality/socket only with arguments, clone3 ENOSYS.
 * What it does inside a kernel: test_privileges.c. */
#include "services/agent/seccomp.h"

#include "libcommon/common.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <string.h>

/* Default deny with EPERM; no refused name allowed, none named twice; the
 * argument rules and clone3's ENOSYS are there. */
static void test_seccomp_profile_lists(void **state)
{
    (void)state;
    size_t n = 0;
    for (const char *const *a = seccomp_allowed; *a; a++, n++) {
        for (const char *const *r = seccomp_refused; *r; r++)
            if (strcmp(*a, *r) == 0) fail_msg("%s is both allowed and refused", *a);
        for (const char *const *b = a + 1; *b; b++)
            if (strcmp(*a, *b) == 0) fail_msg("%s is allowed twice", *a);
        static const char *const argful[] = {"clone", "clone3", "unshare", "personality", "socket"};
        for (size_t i = 0; i < TS_ARRAY_LEN(argful); i++)
            if (strcmp(*a, argful[i]) == 0) fail_msg("%s is allowed whatever its arguments", *a);
    }
    assert_true(n > 250);
    json_t *p = seccomp_default_profile();
    assert_string_equal(json_string_value(json_object_get(p, "defaultAction")), "SCMP_ACT_ERRNO");
    assert_int_equal(json_integer_value(json_object_get(p, "defaultErrnoRet")), EPERM);
    int clone3 = 0, socket_rules = 0, clone_rules = 0;
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(p, "syscalls"), i, r)
    {
        const char *first = json_string_value(json_array_get(json_object_get(r, "names"), 0));
        const char *action = json_string_value(json_object_get(r, "action"));
        if (strcmp(first, "clone3") == 0) {
            assert_string_equal(action, "SCMP_ACT_ERRNO");
            assert_int_equal(json_integer_value(json_object_get(r, "errnoRet")), ENOSYS);
            clone3++;
        }
        if (strcmp(first, "socket") == 0) socket_rules++;
        if (strcmp(first, "clone") == 0) {
            json_t *arg = json_array_get(json_object_get(r, "args"), 0);
            assert_string_equal(json_string_value(json_object_get(arg, "op")),
                                "SCMP_CMP_MASKED_EQ");
            assert_int_equal(json_integer_value(json_object_get(arg, "value")), 0x7E020000);
            assert_int_equal(json_integer_value(json_object_get(arg, "valueTwo")), 0);
            clone_rules++;
        }
    }
    assert_int_equal(clone3, 1);
    assert_int_equal(clone_rules, 1);
    assert_int_equal(socket_rules, 4);
    json_decref(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seccomp_profile_lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
