/* usage_stats.h: Backend.AI's monthly usage series (GET
 * /resource/stats/user/month: the caller's; /resource/stats/admin/month:
 * everyone's, superadmins), from what the registry knows: every kernel that
 * was placed (it held slots) from its creation until its session ended (or
 * now), in 2880 bins of 15 minutes over the last 30 days. Per bin, as the
 * reference: {"date": <bin start, Unix s>, "num_sessions", "cpu_allocated"
 * (cores), "mem_allocated" (bytes), "gpu_allocated" (devices, fractions
 * included), "io_read_bytes", "io_write_bytes", "disk_used"}, each
 * {"value", "unit_hint"}. Block I/O is what the kernels' samples measured,
 * from registry.session_usage_hours (usage_hours.h): kept per hour, so each
 * bin has its part of the hours it overlaps, in proportion to the time (the
 * current hour: of the time passed).
 * disk_used is measured by no one: null, never a made-up 0. */
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
    int64_t io_read_bytes, io_write_bytes;
} usage_bin;

/* Add a kernel that held slots from `from` to `to` (Unix seconds) to the
 * bins starting at start (bin i covers start + i * USAGE_BIN_S, 15 min): every
 * bin it overlaps. Outside the window: nothing. */
void usage_bins_add(usage_bin *bins, int nbins, double start, double from, double to,
                    const slots_t *slots);

/* Add the block I/O measured in the hour from hour_s (Unix s) to the bins
 * it overlaps, each its part in proportion to the overlap (rounded so that
 * the parts of an hour inside the window add up to it); an hour that the
 * window's end (now) cuts is spread over its part before the end. */
void usage_bins_add_io(usage_bin *bins, int nbins, double start, double hour_s, int64_t read,
                       int64_t write);

/* GET /v1/resource/stats/user/month and /v1/resource/stats/admin/month. */
void usage_stats_routes(svc *s);

#endif
