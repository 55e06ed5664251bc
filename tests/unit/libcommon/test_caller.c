/* test_caller.c: the shared caller (libcommon/caller.h): which contexts
 * stand for a caller, what the struct takes from one, and whose things a
 * domain admin may not see. */
#include "libcommon/caller.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

#define USER "7c9e6679-7425-40de-944b-e07fc1f90ae7"
#define SUPER "16fd2706-8baf-433b-82eb-8c7fada847da"

static json_t *context(const char *role, const char *status, bool key_active)
{
    json_t *c = json_pack("{s:{s:s, s:s, s:s, s:s, s:s}, s:b, s:[s]}", "user", "id", USER, "role",
                          role, "domain_name", "default", "email", "u@example.com", "status",
                          status, "is_active", key_active, "domain_superadmins", SUPER);
    assert_non_null(c);
    return c;
}

static void test_refusals(void **state)
{
    (void)state;
    json_t *ok = context("user", "active", true);
    assert_null(caller_context_refusal(ok, USER));
    assert_null(caller_context_refusal(ok, NULL));
    assert_non_null(strstr(caller_context_refusal(ok, SUPER), "not the caller's"));
    json_t *key_off = context("user", "active", false);
    assert_non_null(strstr(caller_context_refusal(key_off, USER), "keypair is not active"));
    json_t *user_off = context("user", "inactive", true);
    assert_non_null(strstr(caller_context_refusal(user_off, USER), "user is not active"));
    json_t *bad = json_pack("{s:{s:s}, s:b}", "user", "id", USER, "is_active", true);
    assert_non_null(strstr(caller_context_refusal(bad, USER), "malformed"));
    json_decref(ok);
    json_decref(key_off);
    json_decref(user_off);
    json_decref(bad);
}

static void test_take_context_and_roles(void **state)
{
    (void)state;
    ts_caller c;
    caller_take_context(&c, "AKIAIOSFODNN7EXAMPLE", context("admin", "active", true));
    assert_string_equal(c.user_id, USER);
    assert_string_equal(c.access_key, "AKIAIOSFODNN7EXAMPLE");
    assert_string_equal(c.domain_name, "default");
    assert_string_equal(c.email, "u@example.com");
    assert_true(caller_is_admin(&c));
    assert_false(caller_is_superadmin(&c));
    /* a domain admin does not see its domain's superadmins */
    assert_true(caller_hides_user(&c, SUPER));
    assert_false(caller_hides_user(&c, USER));
    assert_false(caller_hides_user(&c, NULL));
    caller_free(&c);
    assert_null(c.ctx);
    caller_take_context(&c, "AKIAIOSFODNN7EXAMPLE", context("superadmin", "active", true));
    assert_true(caller_is_superadmin(&c));
    assert_true(caller_is_admin(&c));
    assert_false(caller_hides_user(&c, SUPER));
    caller_free(&c);
    caller_take_context(&c, "AKIAIOSFODNN7EXAMPLE", context("user", "active", true));
    assert_false(caller_is_admin(&c));
    assert_false(caller_hides_user(&c, SUPER));
    caller_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_take_context_and_roles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
