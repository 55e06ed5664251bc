/* test_idle_checks.c: the idle checkers' report (services/registry/idle_network.h,
 * Backend.AI's idle_checks): network_timeout's remaining time counts from the
 * stored deadline or the last use, whichever is later; none for a session
 * without a deadline or with idle_timeout 0; session_lifetime's until the
 * lifetime's end; never negative. */
#include "services/registry/idle_network.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define NOW 1000000

static json_t *checks(int64_t deadline_ms, int64_t last_ms, int timeout_s)
{
    idle_inputs in = {
        .now_ms = NOW, .deadline_ms = deadline_ms, .last_ms = last_ms, .timeout_s = timeout_s};
    return idle_checks_json(&in);
}

static const json_t *net(const json_t *checks)
{
    const json_t *n = json_object_get(checks, "network_timeout");
    assert_non_null(n);
    assert_string_equal(json_string_value(json_object_get(n, "remaining_time_type")),
                        "expire_after");
    return n;
}

static double remaining(const json_t *checks)
{
    const json_t *r = json_object_get(net(checks), "remaining");
    assert_true(json_is_number(r));
    return json_number_value(r);
}

static void test_from_the_deadline(void **state)
{
    (void)state;
    /* deadline 600 s from now, no use recorded */
    json_t *c = checks(1000000 + 600000, 0, 600);
    assert_true(remaining(c) > 599.9 && remaining(c) < 600.1);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(net(c), "extra"), "timeout")), 600);
    /* no scope given: level null */
    assert_true(json_is_null(json_object_get(json_object_get(net(c), "extra"), "level")));
    json_decref(c);
}

static void test_the_level_that_set_it(void **state)
{
    (void)state;
    idle_inputs in = {
        .now_ms = NOW, .deadline_ms = NOW + 60000, .timeout_s = 60, .level = "project"};
    json_t *c = idle_checks_json(&in);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(net(c), "extra"), "level")), "project");
    json_decref(c);
}

static void test_a_later_use_extends_it(void **state)
{
    (void)state;
    /* deadline in 10 s, but used 100 s ago with a 600 s timeout: 500 s left */
    json_t *c = checks(1000000 + 10000, 1000000 - 100000, 600);
    assert_true(remaining(c) > 499.9 && remaining(c) < 500.1);
    json_decref(c);
    /* a use older than the deadline's base changes nothing */
    c = checks(1000000 + 10000, 1000000 - 900000, 600);
    assert_true(remaining(c) > 9.9 && remaining(c) < 10.1);
    json_decref(c);
}

static void test_past_due_is_zero(void **state)
{
    (void)state;
    json_t *c = checks(1000000 - 5000, 0, 60);
    assert_true(remaining(c) == 0.0);
    json_decref(c);
}

static void test_not_checked(void **state)
{
    (void)state;
    /* no deadline (not RUNNING, batch, inference) or idle_timeout 0 */
    json_t *c = checks(0, 1000000, 600);
    assert_true(json_is_null(json_object_get(net(c), "remaining")));
    assert_true(json_is_null(json_object_get(net(c), "extra")));
    json_decref(c);
    c = checks(1000000 + 600000, 0, 0);
    assert_true(json_is_null(json_object_get(net(c), "remaining")));
    json_decref(c);
}

static void test_session_lifetime(void **state)
{
    (void)state;
    idle_inputs in = {.now_ms = NOW, .lifetime_end_ms = NOW + 90000, .max_lifetime_s = 300};
    json_t *c = idle_checks_json(&in);
    const json_t *l = json_object_get(c, "session_lifetime");
    assert_string_equal(json_string_value(json_object_get(l, "remaining_time_type")),
                        "expire_after");
    assert_true(json_number_value(json_object_get(l, "remaining")) > 89.9 &&
                json_number_value(json_object_get(l, "remaining")) < 90.1);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(l, "extra"), "max_lifetime")), 300);
    /* the network checker does not apply here */
    assert_true(json_is_null(json_object_get(net(c), "remaining")));
    json_decref(c);
    /* no lifetime (or not RUNNING: no end) */
    in.max_lifetime_s = 0;
    c = idle_checks_json(&in);
    l = json_object_get(c, "session_lifetime");
    assert_true(json_is_null(json_object_get(l, "remaining")));
    assert_true(json_is_null(json_object_get(l, "extra")));
    json_decref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_from_the_deadline), cmocka_unit_test(test_a_later_use_extends_it),
        cmocka_unit_test(test_past_due_is_zero),  cmocka_unit_test(test_not_checked),
        cmocka_unit_test(test_session_lifetime),  cmocka_unit_test(test_the_level_that_set_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
