/* cuda_region.h: the layout of a container's shared GPU accounting region,
 * the file <shared_dir>/tessera-cuda.region that every process of the
 * container maps (services/cuda-shim/region.h keeps it: the shim writes it,
 * the agent reads it, read-only, for usage samples: services/agent/gpu_usage.h).
 *
 * Header only: the shim is self-contained (no libcommon objects). A reader
 * checks magic (written last when the file is created), version and size
 * before it trusts anything, and reads used[], peak[] and busy_ns[] with atomic
 * loads (the shim updates them with atomic read-modify-writes). Device i is the
 * container's CUDA ordinal i: the order of the kernel's devices.
 *
 * Version 2 appended busy_ns[] and busy_counted after the slots; the first
 * CUDA_REGION_V1_SIZE bytes are version 1's layout, unchanged. A reader accepts
 * a version 1 file of that size (a container started before an upgrade keeps
 * its file): it has no compute time. */
#ifndef LIBCOMMON_CUDA_REGION_H
#define LIBCOMMON_CUDA_REGION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define CUDA_REGION_MAGIC 0x52414354u /* "TCAR" */
#define CUDA_REGION_VERSION 2u
#define CUDA_REGION_V1_SIZE 148992u /* sizeof(cuda_region) of version 1 */
#define CUDA_REGION_SLOTS 1024
#define CUDA_REGION_MAX_DEVICES 16
#define CUDA_REGION_FILE "tessera-cuda.region"

typedef struct cuda_region_slot {
    int32_t pid; /* 0 = free */
    uint32_t pad;
    uint64_t start_time; /* /proc/<pid>/stat field 22 */
    uint64_t used[CUDA_REGION_MAX_DEVICES];
} cuda_region_slot;

/* A token bucket of GPU time in ns, shared by the container's processes. */
typedef struct cuda_region_bucket {
    _Atomic int64_t tokens_ns;
    _Atomic int64_t last_refill_ns; /* CLOCK_MONOTONIC_COARSE */
    char pad[48];
} __attribute__((aligned(64))) cuda_region_bucket;

typedef struct cuda_region {
    uint32_t magic; /* written last when the file is created */
    uint32_t version;
    uint64_t size; /* sizeof(cuda_region) */
    pthread_mutex_t lock;
    uint64_t limit[CUDA_REGION_MAX_DEVICES]; /* as configured by the creator (informational) */
    uint64_t used[CUDA_REGION_MAX_DEVICES];  /* sum of slots[].used */
    uint64_t peak[CUDA_REGION_MAX_DEVICES];  /* high-water mark of used */
    uint64_t acquisitions;
    int64_t last_reap_ns;
    uint64_t reaped;  /* slots returned from dead processes (tests, debugging) */
    uint64_t repairs; /* EOWNERDEAD recoveries */
    cuda_region_bucket bucket[CUDA_REGION_MAX_DEVICES];
    cuda_region_slot slots[CUDA_REGION_SLOTS];
    /* ---- version 2 ---- */
    /* GPU time the container's launches took on each device, ns, cumulative
     * since the region was created: the sum of the compute-share limiter's
     * charges (an estimate per launch from event-measured kernel times, then
     * the correction measured - estimated as sampled launches complete; see
     * docs/cuda-shim.md "Compute share"). Counted only while the limiter is on
     * (a compute share < 1): busy_counted says so. */
    _Atomic int64_t busy_ns[CUDA_REGION_MAX_DEVICES];
    _Atomic uint32_t busy_counted; /* 1 once a process of the container limits compute */
    uint32_t pad2;
} cuda_region;

_Static_assert(__builtin_offsetof(cuda_region, busy_ns) == CUDA_REGION_V1_SIZE,
               "version 1's layout is a prefix of version 2's");

#endif
