/* test_usage_calc.c: usage accounting's arithmetic (usage_calc.c): totals
 * from samples (CPU, memory byte-seconds and peak, GPU device- and
 * share-seconds from the kernel's devices, first/last), the split of a
 * session over a month boundary (the parts add up), and the date, month and
 * group_by parsers' refusals, and the split of a session over days
 * (bucket=day). */
#include "services/registry/usage_calc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

#define T0 1790000000000LL /* 2026-09-21 */

static usage_sample _sample(int64_t start, int64_t secs, int64_t cpu_ms, int64_t mem)
{
    usage_sample s = {.start_ms = start,
                      .end_ms = start + secs * 1000,
                      .cpu_used_ms = cpu_ms,
                      .mem_bytes = mem,
                      .mem_peak_bytes = mem};
    return s;
}

static void test_totals(void **state)
{
    (void)state;
    json_t *dev = json_loads("[{\"device_id\": \"g0\", \"slot_name\": \"cuda.device\","
                             " \"amount\": \"1\"},"
                             " {\"device_id\": \"g1\", \"slot_name\": \"cuda.shares\","
                             " \"amount\": \"0.25\"},"
                             " {\"device_id\": \"g2\", \"slot_name\": \"cuda.shares\","
                             " \"amount\": \"0.5\"},"
                             " {\"device_id\": \"x\", \"slot_name\": \"cpu\", \"amount\": \"4\"}]",
                             0, NULL);
    assert_non_null(dev);
    usage_alloc a;
    usage_alloc_from_devices(dev, &a);
    json_decref(dev);
    assert_float_equal(a.gpu_devices, 1.0, 1e-9);
    assert_float_equal(a.gpu_shares, 0.75, 1e-9);

    usage_totals t;
    memset(&t, 0, sizeof(t));
    /* two 5 s intervals at one core, then a later one at half a core */
    usage_sample s1 = _sample(T0, 5, 5000, 1000);
    usage_sample s2 = _sample(T0 + 5000, 5, 5000, 3000);
    s2.mem_peak_bytes = 8000;
    s2.net_rx_bytes = 10;
    usage_sample s3 = _sample(T0 + 10000, 10, 5000, 2000);
    s3.gpu_mem_bytes = 77;
    usage_totals_add(&t, &s2, &a); /* out of order: first/last still right */
    usage_totals_add(&t, &s1, &a);
    usage_totals_add(&t, &s3, &a);
    assert_int_equal(t.cpu_ms, 15000);
    assert_float_equal(t.mem_byte_s, 1000.0 * 5 + 3000.0 * 5 + 2000.0 * 10, 1e-6);
    assert_int_equal(t.mem_peak_bytes, 8000);
    assert_int_equal(t.gpu_mem_peak_bytes, 77);
    assert_float_equal(t.gpu_device_s, 20.0, 1e-9);
    assert_float_equal(t.gpu_share_s, 15.0, 1e-9);
    assert_int_equal(t.net_rx_bytes, 10);
    assert_int_equal(t.samples, 3);
    assert_int_equal(t.first_ms, T0);
    assert_int_equal(t.last_ms, T0 + 20000);

    /* no GPU: nothing counted */
    usage_alloc none;
    usage_alloc_from_devices(NULL, &none);
    assert_float_equal(none.gpu_devices + none.gpu_shares, 0.0, 1e-12);
}

static void test_sample_check(void **state)
{
    (void)state;
    ts_err err;
    usage_sample ok = _sample(T0, 5, 100, 1);
    assert_true(usage_sample_check(&ok, &err));
    usage_sample back = ok;
    back.end_ms = back.start_ms - 1;
    assert_false(usage_sample_check(&back, &err));
    usage_sample long_one = _sample(T0, 2 * 24 * 3600, 1, 1);
    assert_false(usage_sample_check(&long_one, &err));
    usage_sample neg = ok;
    neg.cpu_used_ms = -1;
    assert_false(usage_sample_check(&neg, &err));
    usage_sample epoch = _sample(0, 5, 1, 1);
    assert_false(usage_sample_check(&epoch, &err));
}

static void test_month_split(void **state)
{
    (void)state;
    ts_err err;
    int64_t sep0, oct0, oct1, nov1;
    assert_true(usage_parse_month("202609", &sep0, &oct0, &err));
    assert_true(usage_parse_month("202610", &oct1, &nov1, &err));
    assert_int_equal(oct0, oct1);
    assert_int_equal(oct1, 1790812800000LL); /* 2026-10-01T00:00:00Z */
    /* a session from Sep 30 18:00 to Oct 1 06:00: half in each month */
    usage_totals t;
    memset(&t, 0, sizeof(t));
    usage_alloc a = {.gpu_devices = 2};
    usage_sample s = _sample(oct1 - 6 * 3600 * 1000LL, 12 * 3600, 36000001, 4096);
    usage_totals_add(&t, &s, &a);
    double fs = usage_share(t.first_ms, t.last_ms, sep0, oct1);
    double fo = usage_share(t.first_ms, t.last_ms, oct1, nov1);
    assert_float_equal(fs, 0.5, 1e-12);
    assert_float_equal(fo, 0.5, 1e-12);
    usage_totals ps, po;
    usage_totals_scale(&t, fs, &ps);
    usage_totals_scale(&t, fo, &po);
    assert_float_equal(ps.gpu_device_s + po.gpu_device_s, t.gpu_device_s, 1e-6);
    assert_float_equal(ps.gpu_device_s, 12 * 3600.0, 1e-6);
    assert_true(llabs(ps.cpu_ms + po.cpu_ms - t.cpu_ms) <= 1);
    assert_int_equal(ps.mem_peak_bytes, 4096); /* a peak is not split */
    /* a third of it in a window that covers the last 4 hours */
    assert_float_equal(usage_share(t.first_ms, t.last_ms, oct1 + 2 * 3600 * 1000LL, nov1), 1.0 / 3,
                       1e-12);
    /* outside: nothing; a point in time counts where it falls */
    assert_float_equal(usage_share(t.first_ms, t.last_ms, nov1, nov1 + 1000), 0.0, 0);
    assert_float_equal(usage_share(oct1, oct1, oct1, nov1), 1.0, 0);
    assert_float_equal(usage_share(oct1, oct1, sep0, oct1), 0.0, 0);
}

static void test_day_split(void **state)
{
    (void)state;
    ts_err err;
    int64_t oct1, nov1;
    assert_true(usage_parse_month("202610", &oct1, &nov1, &err));
    const int64_t day = 86400LL * 1000, hour = 3600LL * 1000;
    /* a session from Oct 2 18:00 to Oct 4 06:00 (36 h at 1 core, 1 device):
     * 6 h on the 2nd, 24 h on the 3rd, 6 h on the 4th */
    usage_totals t;
    memset(&t, 0, sizeof(t));
    usage_alloc a = {.gpu_devices = 1};
    usage_sample s1 = _sample(oct1 + day + 18 * hour, 18 * 3600, 18 * 3600 * 1000LL, 1000);
    usage_sample s2 = _sample(oct1 + 2 * day + 12 * hour, 18 * 3600, 18 * 3600 * 1000LL, 5000);
    usage_totals_add(&t, &s1, &a);
    usage_totals_add(&t, &s2, &a);
    usage_totals out[5];
    double sh[5];
    assert_int_equal(usage_split_days(&t, oct1, 5, out, sh), 3);
    assert_float_equal(sh[0], 0.0, 0);
    assert_float_equal(sh[1], 6.0 / 36, 1e-12);
    assert_float_equal(sh[2], 24.0 / 36, 1e-12);
    assert_float_equal(sh[3], 6.0 / 36, 1e-12);
    assert_float_equal(sh[4], 0.0, 0);
    assert_int_equal(out[1].cpu_ms, 6 * 3600 * 1000LL);
    assert_int_equal(out[2].cpu_ms, 24 * 3600 * 1000LL);
    assert_float_equal(out[3].gpu_device_s, 6 * 3600.0, 1e-6);
    /* days without a part are zero, peaks are not split, the parts add up */
    assert_int_equal(out[0].cpu_ms, 0);
    assert_int_equal(out[0].samples, 0);
    assert_int_equal(out[4].mem_peak_bytes, 0);
    assert_int_equal(out[2].mem_peak_bytes, 5000);
    int64_t cpu = 0;
    double mem = 0, gpu = 0;
    for (int i = 0; i < 5; i++) {
        cpu += out[i].cpu_ms;
        mem += out[i].mem_byte_s;
        gpu += out[i].gpu_device_s;
    }
    assert_true(llabs(cpu - t.cpu_ms) <= 3);
    assert_float_equal(mem, t.mem_byte_s, 1e-3);
    assert_float_equal(gpu, t.gpu_device_s, 1e-6);
    /* a window that starts after the session: nothing */
    assert_int_equal(usage_split_days(&t, oct1 + 10 * day, 5, out, sh), 0);
    /* a session of no length counts on the day it falls */
    usage_totals pt = {.cpu_ms = 7, .samples = 1, .first_ms = oct1 + day, .last_ms = oct1 + day};
    assert_int_equal(usage_split_days(&pt, oct1, 3, out, sh), 1);
    assert_int_equal(out[1].cpu_ms, 7);
}

static void test_parsers(void **state)
{
    (void)state;
    ts_err err;
    int64_t ms, a, b;
    assert_true(usage_parse_day("20261001", &ms, &err));
    assert_int_equal(ms, 1790812800000LL);
    assert_true(usage_parse_day("2026-10-01", &ms, &err));
    assert_int_equal(ms, 1790812800000LL);
    assert_true(usage_parse_day("20240229", &ms, &err));
    const char *bad_days[] = {"",         "2026101",  "202610011", "2026-1001", "20261301",
                              "20260230", "20230229", "19691231",  "abcdefgh",  "2026-10-0x"};
    for (size_t i = 0; i < TS_ARRAY_LEN(bad_days); i++)
        assert_false(usage_parse_day(bad_days[i], &ms, &err));
    assert_false(usage_parse_day(NULL, &ms, &err));
    assert_true(usage_parse_month("202612", &a, &b, &err));
    assert_int_equal(b - a, 31LL * 86400 * 1000);
    const char *bad_months[] = {"", "2026", "202613", "202600", "2026-10", "20261", "x02610"};
    for (size_t i = 0; i < TS_ARRAY_LEN(bad_months); i++)
        assert_false(usage_parse_month(bad_months[i], &a, &b, &err));
    usage_group g;
    assert_true(usage_group_parse("resource_group", &g));
    assert_int_equal(g, USAGE_BY_RESOURCE_GROUP);
    assert_string_equal(usage_group_name(g), "resource_group");
    assert_false(usage_group_parse("agent", &g));
    assert_false(usage_group_parse("", &g));
    assert_false(usage_group_parse(NULL, &g));
}

/* Block I/O and network bytes: summed over samples, refused when negative,
 * split over a period with the rest of the totals (the parts add up). */
static void test_io_net(void **state)
{
    (void)state;
    usage_alloc none;
    usage_alloc_from_devices(NULL, &none);
    usage_totals t;
    memset(&t, 0, sizeof(t));
    usage_sample a = _sample(T0, 3, 10, 1);
    a.io_read_bytes = 4096;
    a.io_write_bytes = 8 << 20;
    a.net_rx_bytes = 1000;
    a.net_tx_bytes = 20;
    usage_sample b = _sample(T0 + 3000, 3, 10, 1);
    b.io_write_bytes = 1 << 20;
    b.net_rx_bytes = 500;
    usage_totals_add(&t, &a, &none);
    usage_totals_add(&t, &b, &none);
    assert_int_equal(t.io_read_bytes, 4096);
    assert_int_equal(t.io_write_bytes, 9 << 20);
    assert_int_equal(t.net_rx_bytes, 1500);
    assert_int_equal(t.net_tx_bytes, 20);
    /* GPU memory: the high-water mark when a sample carries one */
    usage_sample g = _sample(T0 + 6000, 3, 0, 1);
    g.gpu_mem_bytes = 100;
    g.gpu_mem_peak_bytes = 5000;
    usage_totals_add(&t, &g, &none);
    assert_int_equal(t.gpu_mem_peak_bytes, 5000);

    ts_err err;
    usage_sample neg = a;
    neg.io_write_bytes = -1;
    assert_false(usage_sample_check(&neg, &err));
    neg = a;
    neg.io_read_bytes = -5;
    assert_false(usage_sample_check(&neg, &err));

    t.phase_s[USAGE_PHASE_RUNNING] = 6.0;
    usage_totals h1, h2;
    usage_totals_scale(&t, 0.25, &h1);
    usage_totals_scale(&t, 0.75, &h2);
    assert_int_equal(h1.io_write_bytes + h2.io_write_bytes, t.io_write_bytes);
    assert_int_equal(h1.io_read_bytes + h2.io_read_bytes, t.io_read_bytes);
    assert_float_equal(h1.phase_s[USAGE_PHASE_RUNNING] + h2.phase_s[USAGE_PHASE_RUNNING], 6.0,
                       1e-9);
}

/* GPU time (the cuda-shim's estimate): summed over samples, refused when
 * negative, split over days with the rest (the parts add up, to a ms a day;
 * none on a day without a part). */
static void test_gpu_busy(void **state)
{
    (void)state;
    ts_err err;
    int64_t oct1, nov1;
    assert_true(usage_parse_month("202610", &oct1, &nov1, &err));
    const int64_t hour = 3600LL * 1000;
    usage_alloc a = {.gpu_shares = 0.5};
    usage_totals t;
    memset(&t, 0, sizeof(t));
    /* 12 h from Oct 1 18:00 (6 h on the 1st, 6 on the 2nd) */
    usage_sample s1 = _sample(oct1 + 18 * hour, 6 * 3600, 0, 1);
    s1.gpu_busy_ms = 3600001; /* an hour and a ms of GPU time */
    usage_sample s2 = _sample(oct1 + 24 * hour, 6 * 3600, 0, 1);
    s2.gpu_busy_ms = 7199999;
    usage_sample s3 = _sample(oct1 + 30 * hour, 0, 0, 1); /* none measured */
    usage_totals_add(&t, &s1, &a);
    usage_totals_add(&t, &s2, &a);
    usage_totals_add(&t, &s3, &a);
    assert_int_equal(t.gpu_busy_ms, 10800000);
    assert_true(usage_sample_check(&s1, &err));
    usage_sample neg = s1;
    neg.gpu_busy_ms = -1;
    assert_false(usage_sample_check(&neg, &err));

    usage_totals out[3];
    double sh[3];
    assert_int_equal(usage_split_days(&t, oct1, 3, out, sh), 2);
    assert_int_equal(out[0].gpu_busy_ms, 5400000);
    assert_int_equal(out[1].gpu_busy_ms, 5400000);
    assert_int_equal(out[2].gpu_busy_ms, 0);
    usage_totals q1, q3;
    usage_totals_scale(&t, 1.0 / 3, &q1);
    usage_totals_scale(&t, 2.0 / 3, &q3);
    assert_true(llabs(q1.gpu_busy_ms + q3.gpu_busy_ms - t.gpu_busy_ms) <= 1);
    assert_int_equal(q1.gpu_busy_ms, 3600000);
}

/* Wall time per phase from a status history: each status lasts until the
 * next; the final one counts nothing; the phases add up to the lifetime. */
static void test_status_seconds(void **state)
{
    (void)state;
    usage_status_change h[] = {
        {"PENDING", T0},           {"SCHEDULED", T0 + 500},    {"PREPARING", T0 + 1000},
        {"PULLING", T0 + 1200},    {"CREATING", T0 + 3000},    {"RUNNING", T0 + 3500},
        {"RESTARTING", T0 + 9500}, {"RUNNING", T0 + 10000},    {"TERMINATING", T0 + 70000},
        {"BOGUS", T0 + 71000},     {"TERMINATED", T0 + 71250},
    };
    double ph[USAGE_N_PHASES];
    usage_status_seconds(h, TS_ARRAY_LEN(h), ph);
    assert_float_equal(ph[USAGE_PHASE_PENDING], 1.0, 1e-9);
    assert_float_equal(ph[USAGE_PHASE_PREPARING], 2.5 + 0.5, 1e-9);
    assert_float_equal(ph[USAGE_PHASE_RUNNING], 6.0 + 60.0, 1e-9);
    assert_float_equal(ph[USAGE_PHASE_TERMINATING], 1.0, 1e-9);
    assert_float_equal(ph[USAGE_PHASE_OTHER], 0.25, 1e-9);
    double sum = 0;
    for (int i = 0; i < USAGE_N_PHASES; i++)
        sum += ph[i];
    assert_float_equal(sum, 71.25, 1e-9);

    /* a clock that went back counts nothing; one status alone, nothing */
    usage_status_change back[] = {
        {"PENDING", T0 + 5000}, {"RUNNING", T0}, {"TERMINATED", T0 + 2000}};
    usage_status_seconds(back, 3, ph);
    assert_float_equal(ph[USAGE_PHASE_PENDING], 0.0, 1e-12);
    assert_float_equal(ph[USAGE_PHASE_RUNNING], 2.0, 1e-9);
    usage_status_seconds(back, 1, ph);
    assert_float_equal(ph[USAGE_PHASE_PENDING] + ph[USAGE_PHASE_RUNNING], 0.0, 1e-12);
    usage_status_seconds(NULL, 0, ph);
    assert_float_equal(ph[USAGE_PHASE_OTHER], 0.0, 1e-12);

    assert_int_equal(usage_phase_of("PULLING"), USAGE_PHASE_PREPARING);
    assert_int_equal(usage_phase_of("TERMINATING"), USAGE_PHASE_TERMINATING);
    assert_int_equal(usage_phase_of(NULL), USAGE_PHASE_OTHER);
    assert_string_equal(usage_phase_name(USAGE_PHASE_RUNNING), "running");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_totals),      cmocka_unit_test(test_sample_check),
        cmocka_unit_test(test_month_split), cmocka_unit_test(test_day_split),
        cmocka_unit_test(test_parsers),     cmocka_unit_test(test_io_net),
        cmocka_unit_test(test_gpu_busy),    cmocka_unit_test(test_status_seconds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
