/* usage_stats.h: Backend.AI's monthly usage series (GET
 * /resource/stats/user/month: the caller's; /resource/stats/admin/month:
 * everyone's, superadmins), from what the registry knows: every kernel that
 * was placed (it held slots) from its creation until its session ended (or
 * now), in 2880 bins of 15 minutes over the last 30 days. Per bin, as the
 * reference: {"date": <bin start, Unix s>, "num_sessions", "cpu_allocated"
 * (cores), "mem_allocated" (bytes), "gpu_allocated" (devices, fractions
 * included), "io_read_bytes", "io_write_bytes", "disk_used"}, each
 * {"value", "unit_hint"}. The three I/O figures are measured by no one yet
 * (the agent does not sample I/O): their value is null, never a made-up 0. */
#ifndef REGISTRY_USAGE_STATS_H
#define REGISTRY_USAGE_STATS_H

#include "libcommon/slots.h"
#include "libcommon/svc.h"

#define USAGE_BIN_S 900
#define USAGE_BINS 2880

typedef struct usage_bin {
    int64_t sessions;
    int64_t cpu_milli; /* cpu quanta (1000 = one core) */
    int64_t mem_bytes;
    int64_t gpu_shares; /* cuda.device as 100 shares each, plus cuda.shares */
} usage_bin;

/* Add a kernel that held slots from `from` to `to` (Unix seconds) to the
 * bins starting at start (bin i covers start + i * USAGE_BIN_S, 15 min): every
 * bin it overlaps. Outside the window: nothing. */
void usage_bins_add(usage_bin *bins, int nbins, double start, double from, double to,
                    const slots_t *slots);

/* GET /v1/resource/stats/user/month and /v1/resource/stats/admin/month. */
void usage_stats_routes(svc *s);

#endif
