/* limiter.h: the compute-share limiter (design in docs/cuda-shim.md).
 *
 * A token bucket of GPU time per device, in the shared region so that all of a
 * container's processes draw on one budget, refilled at share x wall time. Every
 * launch pays the estimated GPU time of what it launches before it is submitted;
 * when the bucket is in debt the launching thread sleeps until it is repaid.
 * Estimates are per (function, grid size) or per graph, measured with a pair of
 * events around the launch: synchronously the first time a key is seen, then
 * asynchronously on a sample of launches (at most one every 5 ms per process),
 * each completed sample correcting the bucket by (measured - charged).
 * When the stream was idle as the start event was recorded, the GPU stamps it
 * at once and the kernel only starts once the host has submitted it: the
 * host's time from that record to the launch's return is taken off the
 * measurement (a real GPU's events include that gap). */
#ifndef TESSERA_CUDA_SHIM_LIMITER_H
#define TESSERA_CUDA_SHIM_LIMITER_H

#include "services/cuda-shim/shim.h"

extern bool tshim_limiter_on;

/* Set up from the config once the region is attached (tshim_init). */
void tshim_limiter_init(void);

typedef struct tshim_ticket {
    int mode; /* 0 = charged from the estimate, 1 = async sample, 2 = first sight (sync) */
    int dev;
    unsigned slot; /* estimate table index */
    uint64_t key;
    int64_t charged;
    CUevent start;
    int64_t idle_since_ns; /* the stream was idle: when the start event was recorded; else 0 */
} tshim_ticket;

/* Before the launch: wait for budget, charge, maybe record a start event. */
void tshim_limiter_before(tshim_ticket *t, uint64_t key, CUstream stream);
/* After the launch (r = the driver's answer): finish the sample if one was taken. */
void tshim_limiter_after(tshim_ticket *t, CUstream stream, CUresult r);

static inline uint64_t tshim_kernel_key(const void *f, uint64_t threads)
{
    return ((uint64_t)(uintptr_t)f * 0x9E3779B97F4A7C15ull) ^ (threads * 0xC2B2AE3D27D4EB4Full);
}

#endif
