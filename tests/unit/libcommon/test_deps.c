/* test_deps.c: libcommon/deps.c: a dependency is judged down only after
 * deps.down_after_failures failures in a row over deps.down_after without an
 * answer; a slow answer that timed out between answers leaves it up (failing,
 * not down); one answer brings it back; /metrics says so. */
#include "libcommon/deps.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int reset(void **state)
{
    (void)state;
    deps_reset();
    deps_set_policy(
        &(deps_policy){.failures = DEPS_DEFAULT_FAILURES, .window_ms = DEPS_DEFAULT_WINDOW_MS});
    return 0;
}

static char *metrics_text(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    deps_collect(f, NULL);
    fclose(f);
    return buf;
}

/* Failures short of the count: failing (a 500 becomes 503), never down. */
static void test_failures_below_count_are_not_an_outage(void **state)
{
    (void)state;
    deps_set_policy(&(deps_policy){.failures = 3, .window_ms = 0});
    deps_failed(DEP_REDIS, "timed out");
    deps_failed(DEP_REDIS, "timed out");
    assert_true(deps_is_failing(DEP_REDIS));
    assert_false(deps_is_down(DEP_REDIS));
    assert_null(deps_down());
    assert_string_equal(deps_failing(), "redis");
    deps_failed(DEP_REDIS, "timed out");
    assert_true(deps_is_down(DEP_REDIS));
    assert_string_equal(deps_down(), "redis");
}

/* An answer between slow ones starts the count again: timeouts that
 * alternate with answers never make an outage, however many. */
static void test_answers_between_timeouts_keep_it_up(void **state)
{
    (void)state;
    deps_set_policy(&(deps_policy){.failures = 2, .window_ms = 0});
    for (int i = 0; i < 100; i++) {
        deps_failed(DEP_REDIS, "timed out after 2000 ms");
        assert_false(deps_is_down(DEP_REDIS));
        deps_answered(DEP_REDIS);
        assert_false(deps_is_failing(DEP_REDIS));
    }
    char *m = metrics_text();
    assert_non_null(strstr(m, "tessera_dependency_up{dependency=\"redis\"} 1\n"));
    assert_non_null(strstr(m, "tessera_dependency_outages_total{dependency=\"redis\"} 0\n"));
    assert_non_null(strstr(m, "tessera_dependency_failures_total{dependency=\"redis\"} 100\n"));
    free(m);
}

/* Many failures in a row are not enough while the window has not passed
 * since the first of them. */
static void test_count_without_window_is_not_an_outage(void **state)
{
    (void)state;
    deps_set_policy(&(deps_policy){.failures = 1, .window_ms = 3600 * 1000});
    for (int i = 0; i < 50; i++)
        deps_failed(DEP_POSTGRESQL, "connection refused");
    assert_false(deps_is_down(DEP_POSTGRESQL));
    assert_true(deps_is_failing(DEP_POSTGRESQL));
}

/* Count and window both passed: down, counted once however many failures
 * follow; one answer: up, and a later streak is a new outage. */
static void test_outage_after_window_and_recovery(void **state)
{
    (void)state;
    deps_set_policy(&(deps_policy){.failures = 2, .window_ms = 1});
    deps_failed(DEP_KAFKA, "connection refused");
    usleep(5 * 1000); /* past the 1 ms window */
    assert_false(deps_is_down(DEP_KAFKA));
    deps_failed(DEP_KAFKA, "connection refused");
    assert_true(deps_is_down(DEP_KAFKA));
    for (int i = 0; i < 10; i++)
        deps_failed(DEP_KAFKA, "connection refused");
    char *m = metrics_text();
    assert_non_null(strstr(m, "tessera_dependency_up{dependency=\"kafka\"} 0\n"));
    assert_non_null(strstr(m, "tessera_dependency_outages_total{dependency=\"kafka\"} 1\n"));
    free(m);
    deps_answered(DEP_KAFKA);
    assert_false(deps_is_down(DEP_KAFKA));
    assert_null(deps_failing());
    deps_failed(DEP_KAFKA, "connection refused");
    usleep(5 * 1000);
    deps_failed(DEP_KAFKA, "connection refused");
    assert_true(deps_is_down(DEP_KAFKA));
    m = metrics_text();
    assert_non_null(strstr(m, "tessera_dependency_outages_total{dependency=\"kafka\"} 2\n"));
    free(m);
    /* the others were never touched */
    assert_false(deps_is_failing(DEP_POSTGRESQL));
    assert_false(deps_is_failing(DEP_REDIS));
}

/* Out-of-range policies are clamped, not taken as is. */
static void test_policy_is_clamped(void **state)
{
    (void)state;
    deps_set_policy(&(deps_policy){.failures = 0, .window_ms = -5});
    deps_policy p;
    deps_get_policy(&p);
    assert_int_equal(p.failures, 1);
    assert_int_equal(p.window_ms, 0);
    deps_failed(DEP_REDIS, "refused");
    assert_true(deps_is_down(DEP_REDIS));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_failures_below_count_are_not_an_outage, reset),
        cmocka_unit_test_setup(test_answers_between_timeouts_keep_it_up, reset),
        cmocka_unit_test_setup(test_count_without_window_is_not_an_outage, reset),
        cmocka_unit_test_setup(test_outage_after_window_and_recovery, reset),
        cmocka_unit_test_setup(test_policy_is_clamped, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
