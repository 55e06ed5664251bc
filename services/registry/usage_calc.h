/* usage_calc.h: usage accounting's arithmetic, pure (no I/O; unit-tested in
 * tests/unit/registry/test_usage_calc.c). A KernelUsage sample covers one
 * interval of one kernel; a session's totals are the sums over its kernels'
 * samples (docs/usage.md):
 *   cpu_ms        CPU time used, all cores together
 *   mem_byte_s    memory in use at the interval's end x the interval (s)
 *   mem_peak      the largest peak seen
 *   gpu_device_s  whole devices the kernel holds (cuda.device) x the interval
 *   gpu_share_s   fractional shares it holds (cuda.shares, in devices: 0.25
 *                 is a quarter of one) x the interval
 *   gpu_busy_ms   GPU time the kernel's launches took (the cuda-shim's
 *                 estimate, only under a compute share < 1), a sum
 *   net bytes     sums, and block I/O bytes (read, written) too;
 *                 samples: count; first/last: the earliest interval start
 *                 and the latest interval end
 *   phase seconds wall time the session spent in each phase of its status
 *                 history (usage_status_seconds), written once it ends
 * What a sample measured is also kept per UTC hour in which it was measured
 * (usage_split_sample, usage_status_hours): a period's figures are the sums
 * of its hours, so a day's usage is what was used on that day whenever it is
 * asked for, and the periods of a session add up to its totals. */
#ifndef REGISTRY_USAGE_CALC_H
#define REGISTRY_USAGE_CALC_H

#include "libcommon/common.h"

#include <jansson.h>

/* The longest interval a sample may cover (an agent samples every few
 * seconds; anything longer is a broken clock). */
#define USAGE_MAX_INTERVAL_MS (24LL * 3600 * 1000)

typedef struct usage_sample {
    int64_t start_ms, end_ms;
    int64_t cpu_used_ms;
    int64_t mem_bytes, mem_peak_bytes;
    int64_t gpu_mem_bytes, gpu_mem_peak_bytes; /* in use at the end; high-water mark */
    int64_t gpu_busy_ms;                       /* GPU time in the interval, devices together */
    int64_t net_rx_bytes, net_tx_bytes;
    int64_t io_read_bytes, io_write_bytes;
} usage_sample;

/* A kernel's GPU allocation, in devices. */
typedef struct usage_alloc {
    double gpu_devices; /* cuda.device amounts */
    double gpu_shares;  /* cuda.shares amounts (1.00 = a device) */
} usage_alloc;

typedef struct usage_totals {
    int64_t cpu_ms;
    double mem_byte_s;
    int64_t mem_peak_bytes;
    double gpu_device_s, gpu_share_s;
    int64_t gpu_mem_peak_bytes;
    int64_t gpu_busy_ms;
    int64_t net_rx_bytes, net_tx_bytes;
    int64_t io_read_bytes, io_write_bytes;
    double phase_s[5]; /* by usage_phase */
    int64_t samples;
    int64_t first_ms, last_ms; /* 0 when no sample yet */
} usage_totals;

/* Whether a sample can be counted: start <= end, the interval at most
 * USAGE_MAX_INTERVAL_MS, start after 2000-01-01, no negative amount. */
bool usage_sample_check(const usage_sample *s, ts_err *err) TS_MUST_CHECK;

/* A kernel's allocation from its devices as placed ([{"device_id",
 * "slot_name", "amount"}], kernels.devices); anything else counts 0. */
void usage_alloc_from_devices(const json_t *devices, usage_alloc *out);

/* Add one (checked) sample to t. */
void usage_totals_add(usage_totals *t, const usage_sample *s, const usage_alloc *a);

#define USAGE_HOUR_MS (3600LL * 1000)
#define USAGE_DAY_MS (24 * USAGE_HOUR_MS)
/* The most UTC hours the interval of a checked sample touches. */
#define USAGE_MAX_SAMPLE_HOURS (USAGE_MAX_INTERVAL_MS / USAGE_HOUR_MS + 1)

/* What was used in one UTC hour (registry.session_usage_hours). */
typedef struct usage_hour {
    int64_t hour_ms; /* the hour's start, Unix ms */
    usage_totals t;
} usage_hour;

/* A checked sample, with its kernel's allocation, over the UTC hours its
 * interval [start, end) covers: each hour gets the part measured in it, in
 * proportion to the time (integers split so that the parts add up to the
 * sample exactly), the peaks in each, the sample counted once (in its last
 * hour), first/last the interval's part in it. A sample of no length falls
 * wholly in its hour. Returns how many hours (1..USAGE_MAX_SAMPLE_HOURS),
 * in order. */
size_t usage_split_sample(const usage_sample *s, const usage_alloc *a,
                          usage_hour out[USAGE_MAX_SAMPLE_HOURS]);

/* The longest periods GET /v1/usage splits by day and by hour. */
#define USAGE_MAX_BUCKET_DAYS 366
#define USAGE_MAX_BUCKET_HOURS (31 * 24)

/* "YYYYMMDD" or "YYYY-MM-DD" (a real date, years 1970..9999) -> its 00:00
 * UTC, Unix ms; false with err otherwise. */
bool usage_parse_day(const char *s, int64_t *ms, ts_err *err) TS_MUST_CHECK;
/* "YYYYMM" -> [first day 00:00, next month's first day) UTC, Unix ms. */
bool usage_parse_month(const char *s, int64_t *from_ms, int64_t *to_ms, ts_err *err) TS_MUST_CHECK;

/* The phases of a session's life that wall time is kept for, from its
 * statuses: PENDING and SCHEDULED; PREPARING, PULLING, PREPARED, CREATING and
 * RESTARTING; RUNNING (and RUNNING_DEGRADED); TERMINATING; anything else
 * before the end (an unknown status). */
typedef enum usage_phase {
    USAGE_PHASE_PENDING,
    USAGE_PHASE_PREPARING,
    USAGE_PHASE_RUNNING,
    USAGE_PHASE_TERMINATING,
    USAGE_PHASE_OTHER,
} usage_phase;
#define USAGE_N_PHASES 5
usage_phase usage_phase_of(const char *status);
/* "pending", "preparing", "running", "terminating", "other" */
const char *usage_phase_name(usage_phase p);

/* One row of a session's status history. */
typedef struct usage_status_change {
    const char *status;
    int64_t at_ms;
} usage_status_change;
/* Seconds in each phase from a status history in order (each status lasts
 * until the next one's at_ms; the last one, the final status, counts
 * nothing). A change that goes back in time counts 0. */
void usage_status_seconds(const usage_status_change *h, size_t n, double out[USAGE_N_PHASES]);
/* The same per UTC hour: *out (heap, NULL when none) gets the hours with any
 * phase time, in order, phase_s set and the rest 0; returns how many. The
 * hours' phases add up to usage_status_seconds'. */
size_t usage_status_hours(const usage_status_change *h, size_t n, usage_hour **out);

/* What GET /v1/usage groups by; the column of session_usage it names. */
typedef enum usage_group {
    USAGE_BY_USER,
    USAGE_BY_PROJECT,
    USAGE_BY_DOMAIN,
    USAGE_BY_RESOURCE_GROUP,
    USAGE_BY_IMAGE,
} usage_group;
bool usage_group_parse(const char *s, usage_group *out) TS_MUST_CHECK;
const char *usage_group_name(usage_group g);

#endif
