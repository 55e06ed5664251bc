/* usage_hours.h: what each session used per UTC hour in which it was measured
 * (registry.session_usage_hours, migration 0015; docs/usage.md "How it is
 * stored"). usage_store.c adds each sample's hours (usage_split_sample) in
 * the transaction that stores the sample, and sets each hour's wall time per
 * phase when the session ends (usage_status_hours); the reports (usage_api.c,
 * usage_bai.c) sum the hours of their period. */
#ifndef REGISTRY_USAGE_HOURS_H
#define REGISTRY_USAGE_HOURS_H

#include "usage_calc.h"

#include "libcommon/common.h"

#include <libpq-fe.h>

/* Add the n hours' figures (not their phases) to the session's rows. */
bool usage_hours_add(PGconn *conn, const char *session_id, const usage_hour *h, size_t n,
                     ts_err *err) TS_MUST_CHECK;

/* Set the n hours' phase seconds of the session (the rest of each row kept). */
bool usage_hours_set_phases(PGconn *conn, const char *session_id, const usage_hour *h, size_t n,
                            ts_err *err) TS_MUST_CHECK;

/* The sums of a session's hours h over a period, in the order
 * usage_row_totals (usage_api.h) reads them; first and last are the
 * period's first and last hour with figures. For a query over
 * registry.session_usage_hours h ... GROUP BY. */
#define USAGE_HOURS_SUMS                                                                           \
    "sum(h.cpu_ms), sum(h.mem_byte_s), max(h.mem_peak_bytes), sum(h.gpu_device_s),"                \
    " sum(h.gpu_share_s), max(h.gpu_mem_peak_bytes), sum(h.net_rx_bytes), sum(h.net_tx_bytes),"    \
    " sum(h.samples), (extract(epoch FROM min(h.hour)) * 1000)::bigint,"                           \
    " (extract(epoch FROM max(h.hour)) * 1000)::bigint + 3600000, sum(h.io_read_bytes),"           \
    " sum(h.io_write_bytes), sum(h.pending_s), sum(h.preparing_s), sum(h.running_s),"              \
    " sum(h.terminating_s), sum(h.other_s), sum(h.gpu_busy_ms)"

#endif
