/* test_usage_stats.c: the monthly usage series' bins (usage_stats.c): a
 * kernel counts in every 15-minute bin it overlaps, clipped to the window;
 * its cores, bytes and GPU devices (whole and fractional) add up; one outside
 * the window adds nothing. */
#include "services/registry/usage_stats.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

static slots_t _slots(const char *json)
{
    json_t *j = json_loads(json, 0, NULL);
    slots_t s;
    ts_err err;
    assert_true(slots_from_json(&s, j, &err));
    json_decref(j);
    return s;
}

static void test_bins(void **state)
{
    (void)state;
    usage_bin b[8];
    memset(b, 0, sizeof(b));
    const double t0 = 1000000.0;
    slots_t one = _slots("{\"cpu\": \"2\", \"mem\": \"1g\", \"cuda.shares\": \"0.5\"}");
    slots_t two = _slots("{\"cpu\": \"0.5\", \"mem\": \"512m\", \"cuda.device\": \"1\"}");
    /* bins 1 and 2: from inside bin 1 to inside bin 2 */
    usage_bins_add(b, 8, t0, t0 + USAGE_BIN_S + 10, t0 + 2 * USAGE_BIN_S + 10, &one);
    /* from before the window to inside bin 1: bins 0 and 1 */
    usage_bins_add(b, 8, t0, t0 - 5000, t0 + USAGE_BIN_S + 1, &two);
    /* still running beyond the window's end: up to the last bin */
    usage_bins_add(b, 8, t0, t0 + 7 * USAGE_BIN_S - 1, t0 + 100 * USAGE_BIN_S, &one);
    /* wholly outside: nothing */
    usage_bins_add(b, 8, t0, t0 - 9000, t0 - 1, &one);
    usage_bins_add(b, 8, t0, t0 + 8 * USAGE_BIN_S, t0 + 9 * USAGE_BIN_S, &one);
    /* ended before it began (clock skew): its start bin only */
    usage_bins_add(b, 8, t0, t0 + 4 * USAGE_BIN_S + 5, t0 + 4 * USAGE_BIN_S, &two);
    assert_int_equal(b[0].sessions, 1);
    assert_int_equal(b[0].cpu_milli, 500);
    assert_int_equal(b[0].gpu_shares, 100);
    assert_int_equal(b[1].sessions, 2);
    assert_int_equal(b[1].cpu_milli, 2500);
    assert_int_equal(b[1].mem_bytes, (1LL << 30) + (512LL << 20));
    assert_int_equal(b[1].gpu_shares, 150);
    assert_int_equal(b[2].sessions, 1);
    assert_int_equal(b[2].gpu_shares, 50);
    assert_int_equal(b[3].sessions, 0);
    assert_int_equal(b[4].sessions, 1);
    assert_int_equal(b[5].sessions, 0);
    assert_int_equal(b[6].sessions, 1);
    assert_int_equal(b[7].sessions, 1);
    assert_int_equal(b[7].cpu_milli, 2000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
