/* test_usage_stats.c: the monthly usage series' bins (usage_stats.c): a
 * kernel counts in every 15-minute bin it overlaps, clipped to the window;
 * its cores, bytes and GPU devices (whole and fractional) add up; one outside
 * the window adds nothing; an hour's block I/O is spread over the bins it
 * overlaps. */
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

/* An hour's block I/O in the bins it overlaps: the window's bins are not on
 * the quarter hours, so an hour touches five of them, each its part of the
 * time; the parts add up; what falls before the window is left out. */
static void test_io_bins(void **state)
{
    (void)state;
    usage_bin b[8];
    memset(b, 0, sizeof(b));
    const double t0 = 1000000.0;
    /* an hour from 300 s into bin 0: 600 s of it in bin 0, 900 in 1-3, 300 in 4 */
    usage_bins_add_io(b, 8, t0, t0 + 300, 3600000, 7);
    assert_int_equal(b[0].io_read_bytes, 600000);
    assert_int_equal(b[1].io_read_bytes, 900000);
    assert_int_equal(b[3].io_read_bytes, 900000);
    assert_int_equal(b[4].io_read_bytes, 300000);
    assert_int_equal(b[5].io_read_bytes, 0);
    int64_t w = 0;
    for (int i = 0; i < 8; i++)
        w += b[i].io_write_bytes;
    assert_int_equal(w, 7);
    /* an hour that began 45 minutes before the window: its last quarter */
    memset(b, 0, sizeof(b));
    usage_bins_add_io(b, 8, t0, t0 - 2700, 4000, 0);
    assert_int_equal(b[0].io_read_bytes, 1000);
    assert_int_equal(b[1].io_read_bytes, 0);
    /* the current hour, which the window's end cuts: all in what has passed */
    usage_bins_add_io(b, 8, t0, t0 + 7 * USAGE_BIN_S - 300, 3600, 0);
    assert_int_equal(b[6].io_read_bytes, 900);
    assert_int_equal(b[7].io_read_bytes, 2700);
    /* wholly outside */
    usage_bins_add_io(b, 8, t0, t0 + 8 * USAGE_BIN_S, 1 << 20, 1);
    usage_bins_add_io(b, 8, t0, t0 - 3600, 1 << 20, 1);
    assert_int_equal(b[7].io_read_bytes, 2700);
    assert_int_equal(b[0].io_read_bytes, 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bins),
        cmocka_unit_test(test_io_bins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
