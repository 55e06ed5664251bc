/* test_usage_calc.c: usage accounting's arithmetic (usage_calc.c): totals
 * from samples (CPU, memory byte-seconds and peak, GPU device- and
 * share-seconds from the kernel's devices, first/last), the split of a
 * session over a month boundary (the parts add up), and the date, month and
 * group_by parsers' refusals, and the split of each sample and of a status
 * history over the UTC hours in which they were measured (at any time of
 * day). */
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

/* The sum of a field over n hours. */
#define SUM(h, n, f)                                                                               \
    ({                                                                                             \
        __typeof__((h)[0].t.f) _s = 0;                                                             \
        for (size_t _i = 0; _i < (n); _i++)                                                        \
            _s += (h)[_i].t.f;                                                                     \
        _s;                                                                                        \
    })

/* A sample over a month's end: each hour gets what was measured in it, the
 * months add up to the sample exactly, peaks in every hour, the sample
 * counted once (in its last hour). */
static void test_month_split(void **state)
{
    (void)state;
    ts_err err;
    int64_t sep0, oct0, oct1, nov1;
    assert_true(usage_parse_month("202609", &sep0, &oct0, &err));
    assert_true(usage_parse_month("202610", &oct1, &nov1, &err));
    assert_int_equal(oct0, oct1);
    assert_int_equal(oct1, 1790812800000LL); /* 2026-10-01T00:00:00Z */
    /* Sep 30 18:00 to Oct 1 06:00 (12 h; 2 devices): half in each month */
    usage_alloc a = {.gpu_devices = 2};
    usage_sample s = _sample(oct1 - 6 * USAGE_HOUR_MS, 12 * 3600, 36000001, 4096);
    s.io_write_bytes = 7;
    assert_true(usage_sample_check(&s, &err));
    usage_hour h[USAGE_MAX_SAMPLE_HOURS];
    size_t n = usage_split_sample(&s, &a, h);
    assert_int_equal(n, 12);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(h[i].hour_ms, s.start_ms + (int64_t)i * USAGE_HOUR_MS);
        assert_float_equal(h[i].t.gpu_device_s, 7200.0, 1e-9);
        assert_float_equal(h[i].t.mem_byte_s, 4096.0 * 3600, 1e-6);
        assert_int_equal(h[i].t.mem_peak_bytes, 4096); /* a peak is not split */
        assert_int_equal(h[i].t.samples, i == n - 1 ? 1 : 0);
        assert_int_equal(h[i].t.first_ms, h[i].hour_ms);
        assert_int_equal(h[i].t.last_ms, h[i].hour_ms + USAGE_HOUR_MS);
    }
    /* September's six hours: floor(36000001 * 6/12) */
    assert_int_equal(SUM(h, 6, cpu_ms), 18000000);
    assert_int_equal(SUM(h + 6, 6, cpu_ms), 18000001);
    assert_int_equal(SUM(h, n, cpu_ms), s.cpu_used_ms);
    assert_int_equal(SUM(h, n, io_write_bytes), 7);
    assert_float_equal(SUM(h, n, gpu_device_s), 2 * 12 * 3600.0, 1e-6);
    assert_int_equal(SUM(h, n, samples), 1);
}

/* Hours at the edges: a sample that ends on the hour is wholly before it, one
 * of no length falls in its hour, one across midnight is split to the ms, a
 * day-long one touches 25 hours. */
static void test_hour_split(void **state)
{
    (void)state;
    const int64_t day = USAGE_DAY_MS, hour = USAGE_HOUR_MS, mid = T0 - T0 % day + day;
    usage_alloc none = {0};
    usage_hour h[USAGE_MAX_SAMPLE_HOURS];
    usage_sample on = _sample(mid - 3000, 3, 3000, 1);
    assert_int_equal(usage_split_sample(&on, &none, h), 1);
    assert_int_equal(h[0].hour_ms, mid - hour);
    assert_int_equal(h[0].t.cpu_ms, 3000);
    usage_sample point = _sample(mid, 0, 5, 9);
    point.net_rx_bytes = 11;
    assert_int_equal(usage_split_sample(&point, &none, h), 1);
    assert_int_equal(h[0].hour_ms, mid);
    assert_int_equal(h[0].t.cpu_ms, 5);
    assert_int_equal(h[0].t.net_rx_bytes, 11);
    assert_int_equal(h[0].t.samples, 1);
    /* 23:59:58.500 .. 00:00:01.500, 3 ms of CPU, 1 byte: split at midnight */
    usage_sample across = {.start_ms = mid - 1500,
                           .end_ms = mid + 1500,
                           .cpu_used_ms = 3,
                           .net_tx_bytes = 1,
                           .mem_bytes = 1000};
    assert_int_equal(usage_split_sample(&across, &none, h), 2);
    assert_int_equal(h[0].hour_ms, mid - hour);
    assert_int_equal(h[1].hour_ms, mid);
    assert_int_equal(h[0].t.cpu_ms, 1);
    assert_int_equal(h[1].t.cpu_ms, 2);
    assert_int_equal(h[0].t.net_tx_bytes + h[1].t.net_tx_bytes, 1);
    assert_float_equal(h[0].t.mem_byte_s, 1500.0, 1e-9);
    assert_float_equal(h[1].t.mem_byte_s, 1500.0, 1e-9);
    assert_int_equal(h[0].t.samples + 2 * h[1].t.samples, 2);
    usage_sample whole_day = _sample(mid + 60000, 24 * 3600, 86400007, 1);
    whole_day.io_read_bytes = INT64_MAX / 2; /* no overflow in the split */
    size_t n = usage_split_sample(&whole_day, &none, h);
    assert_int_equal(n, USAGE_MAX_SAMPLE_HOURS);
    assert_int_equal(SUM(h, n, cpu_ms), 86400007);
    assert_int_equal(SUM(h, n, io_read_bytes), INT64_MAX / 2);
    assert_int_equal(h[0].t.first_ms, mid + 60000);
    assert_int_equal(h[n - 1].t.last_ms, mid + 60000 + day);
}

/* The day a sample's usage lands on does not depend on when anyone asks: the
 * same two hours of samples (22:00-24:00 at one core then two) ending at
 * several times of day, before and after midnight, always put what was used
 * before midnight on the day before and the rest on the day after. */
static void test_days_at_any_time(void **state)
{
    (void)state;
    const int64_t day = USAGE_DAY_MS, hour = USAGE_HOUR_MS, mid = T0 - T0 % day + day;
    const int64_t ends[] = {mid - 1,    mid,          mid + 1, mid + 19 * hour + 36 * 60000,
                            mid + 1500, mid + day - 1};
    usage_alloc none = {0};
    for (size_t e = 0; e < TS_ARRAY_LEN(ends); e++) {
        int64_t end = ends[e];
        /* one core over [end-2h, end-1h), two over [end-1h, end) */
        usage_sample s1 = {.start_ms = end - 2 * hour, .end_ms = end - hour, .cpu_used_ms = hour};
        usage_sample s2 = {.start_ms = end - hour, .end_ms = end, .cpu_used_ms = 2 * hour};
        int64_t before = 0, after = 0;
        const usage_sample *ss[] = {&s1, &s2};
        for (size_t k = 0; k < 2; k++) {
            usage_hour h[USAGE_MAX_SAMPLE_HOURS];
            size_t n = usage_split_sample(ss[k], &none, h);
            for (size_t i = 0; i < n; i++)
                *(h[i].hour_ms < mid ? &before : &after) += h[i].t.cpu_ms;
        }
        /* what was used before midnight, in ms of CPU: the cores times the
         * time of each interval before it */
        int64_t want = 0;
        for (size_t k = 0; k < 2; k++) {
            int64_t lo = ss[k]->start_ms, hi = ss[k]->end_ms < mid ? ss[k]->end_ms : mid;
            if (hi > lo) want += (hi - lo) * (int64_t)(k + 1);
        }
        assert_int_equal(before, want);
        assert_int_equal(before + after, 3 * hour);
    }
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

    /* split by the hours in which it was measured: to the ms */
    usage_hour h[USAGE_MAX_SAMPLE_HOURS];
    size_t n = usage_split_sample(&s1, &a, h);
    assert_int_equal(n, 6);
    assert_int_equal(SUM(h, n, gpu_busy_ms), 3600001);
    assert_int_equal(h[0].t.gpu_busy_ms, 600000);
    assert_int_equal(h[5].t.gpu_busy_ms, 600001);
    assert_float_equal(SUM(h, n, gpu_share_s), 0.5 * 6 * 3600, 1e-6);
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

/* The phases per hour: a status across an hour is split at the hour, the
 * hours add up to usage_status_seconds, a clock that went back counts
 * nothing and an hour it returns to is not listed twice. */
static void test_status_hours(void **state)
{
    (void)state;
    const int64_t hour = USAGE_HOUR_MS, h0 = T0 - T0 % hour;
    usage_status_change h[] = {
        {"PENDING", h0 + hour - 1000},       {"PREPARING", h0 + hour + 500},
        {"RUNNING", h0 + hour + 2500},       {"TERMINATING", h0 + 3 * hour},
        {"TERMINATED", h0 + 3 * hour + 250},
    };
    usage_hour *out;
    size_t n = usage_status_hours(h, TS_ARRAY_LEN(h), &out);
    assert_int_equal(n, 4);
    assert_int_equal(out[0].hour_ms, h0);
    assert_int_equal(out[3].hour_ms, h0 + 3 * hour);
    assert_float_equal(out[0].t.phase_s[USAGE_PHASE_PENDING], 1.0, 1e-9);
    assert_float_equal(out[1].t.phase_s[USAGE_PHASE_PENDING], 0.5, 1e-9);
    assert_float_equal(out[1].t.phase_s[USAGE_PHASE_PREPARING], 2.0, 1e-9);
    assert_float_equal(out[1].t.phase_s[USAGE_PHASE_RUNNING], 3600 - 2.5, 1e-9);
    assert_float_equal(out[2].t.phase_s[USAGE_PHASE_RUNNING], 3600.0, 1e-9);
    assert_float_equal(out[3].t.phase_s[USAGE_PHASE_TERMINATING], 0.25, 1e-9);
    double whole[USAGE_N_PHASES];
    usage_status_seconds(h, TS_ARRAY_LEN(h), whole);
    for (int p = 0; p < USAGE_N_PHASES; p++) {
        double sum = 0;
        for (size_t i = 0; i < n; i++)
            sum += out[i].t.phase_s[p];
        assert_float_equal(sum, whole[p], 1e-9);
    }
    assert_int_equal(out[2].t.cpu_ms + out[2].t.samples, 0);
    free(out);

    usage_status_change back[] = {{"PENDING", h0 + 2 * hour + 10},
                                  {"RUNNING", h0 + 10},
                                  {"TERMINATING", h0 + 2 * hour},
                                  {"TERMINATED", h0 + 2 * hour + 20}};
    n = usage_status_hours(back, TS_ARRAY_LEN(back), &out);
    assert_int_equal(n, 3);
    assert_int_equal(out[0].hour_ms, h0);
    assert_int_equal(out[2].hour_ms, h0 + 2 * hour);
    assert_float_equal(out[2].t.phase_s[USAGE_PHASE_TERMINATING], 0.02, 1e-9);
    assert_float_equal(out[2].t.phase_s[USAGE_PHASE_PENDING], 0.0, 0);
    free(out);
    assert_int_equal(usage_status_hours(back, 1, &out), 0);
    assert_null(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_totals),           cmocka_unit_test(test_sample_check),
        cmocka_unit_test(test_month_split),      cmocka_unit_test(test_hour_split),
        cmocka_unit_test(test_days_at_any_time), cmocka_unit_test(test_status_hours),
        cmocka_unit_test(test_parsers),          cmocka_unit_test(test_io_net),
        cmocka_unit_test(test_gpu_busy),         cmocka_unit_test(test_status_seconds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
