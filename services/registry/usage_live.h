/* usage_live.h: each live kernel's latest usage sample as Backend.AI's
 * live_stat (ComputeContainer.live_stat / last_stat, a JSONString): per
 * metric {"current", "capacity", "pct", "unit_hint", "stats.min", "stats.max",
 * "stats.sum", "stats.avg", "stats.diff", "stats.rate", "stats.version"},
 * numbers as text, for cpu_util (percent; capacity: the kernel's cores x 100),
 * cpu_used (msec, cumulative over the samples kept), mem (bytes; capacity:
 * its memory slot; stats.max: the peak), io_read / io_write (bytes,
 * cumulative; stats.rate: bytes/s of the latest interval), net_rx / net_tx
 * (bps: the latest interval's rate; stats.sum: cumulative bytes), cuda_mem
 * (bytes, when the kernel has GPUs). */
#ifndef REGISTRY_USAGE_LIVE_H
#define REGISTRY_USAGE_LIVE_H

#include <jansson.h>
#include <libpq-fe.h>

/* {"<kernel id>": live_stat} for the session's kernels that are not in a
 * final status and have a sample; {} when none; NULL after a database error
 * (logged). */
json_t *usage_live_kernels(PGconn *conn, const char *session_id);

#endif
