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
 * A period's part of a session's totals is its share of the time from the
 * first sample to the last (usage_share), so the months of a session add up
 * to its totals. Dates are UTC. */
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

/* The part of [first_ms, last_ms] that falls in [from_ms, to_ms), 0..1. A
 * span of no length counts wholly where first_ms falls. */
double usage_share(int64_t first_ms, int64_t last_ms, int64_t from_ms, int64_t to_ms);

/* t's part f (usage_share) in out: sums scaled, peaks and counts kept. */
void usage_totals_scale(const usage_totals *t, double f, usage_totals *out);

/* The longest period GET /v1/usage splits by day (bucket=day). */
#define USAGE_MAX_BUCKET_DAYS 366

/* t split over the n UTC days from day0_ms (a day's 00:00) on: shares[i] is
 * t's part of day i (usage_share), out[i] t scaled by it (usage_totals_scale;
 * a day with no part is zeroed, count and peaks included). Returns how many
 * days have a part. The parts of the days of [first_ms, last_ms] add up to t. */
size_t usage_split_days(const usage_totals *t, int64_t day0_ms, size_t n, usage_totals *out,
                        double *shares);

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
