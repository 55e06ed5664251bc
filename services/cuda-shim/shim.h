/* shim.h: the internal contract of libtessera-cuda.so, the CUDA shim.
 *
 * The shim is preloaded into every process of a container. It exports wrappers
 * for the CUDA driver API and NVML entry points that allocate or report device
 * memory or launch work, and forwards them to the real libcuda.so.1 /
 * libnvidia-ml.so.1, which it opens lazily on the first hooked call.
 *
 * Rules for every file here (the library is injected into arbitrary processes):
 *   - no libcommon, no global constructors that do work, no stderr output unless
 *     TESSERA_CUDA_DEBUG is set (tshim_log is rate-limited);
 *   - never exit() or abort() from a hook, never getenv() after start-up;
 *   - everything is hidden (-fvisibility=hidden) except the hooks, which are
 *     marked TSHIM_EXPORT and listed in exports.map. */
#ifndef TESSERA_CUDA_SHIM_H
#define TESSERA_CUDA_SHIM_H

#include <cudaTypedefs.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "services/cuda-shim/check.h"

/* cuda.h maps cuGetProcAddress to cuGetProcAddress_v2; the shim exports both. */
#undef cuGetProcAddress

#define TSHIM_EXPORT __attribute__((visibility("default")))
#define TSHIM_LIKELY(x) __builtin_expect(!!(x), 1)
#define TSHIM_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Devices the accounting region and the config know about (CUDA ordinals as the
 * container sees them). */
#define TSHIM_MAX_DEVICES 16
/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" and its NUL fit with room to spare
 * (NVML's own UUID buffer is 96 bytes). */
#define TSHIM_UUID_LEN 96

/* ---- configuration (config.c) ----------------------------------------------- */
typedef struct tshim_config {
    uint64_t mem_limit[TSHIM_MAX_DEVICES]; /* bytes; 0 = no cap on that device */
    bool any_mem_limit;
    double compute_share; /* (0, 1]; 1 = no limiter */
    char shared_dir[256]; /* accounting directory; "" = process-private region */
    bool debug;
    unsigned test_hold_lock_ms; /* test hook: sleep this long holding the region lock */
    /* visible_uuids: the container's GPUs in CUDA ordinal order; NVML shows only
     * these, in this order (visibility.c). 0 = no filtering. */
    char visible_uuids[TSHIM_MAX_DEVICES][TSHIM_UUID_LEN];
    int n_visible_uuids;
} tshim_config;

extern tshim_config tshim_cfg;

/* Read the config file (authoritative when present) or the environment. Called
 * once, from tshim_init. */
void tshim_config_load(void);
/* Parse "4g", "512m", "1073741824", "0:4g,1:2g" into per-device limits.
 * Returns false on a syntax error. Exposed for the unit test. */
bool tshim_parse_mem_limit(const char *s, uint64_t limit[TSHIM_MAX_DEVICES]) TS_MUST_CHECK;
bool tshim_parse_size(const char *s, uint64_t *out) TS_MUST_CHECK;
/* Parse "GPU-...,GPU-..." (at most TSHIM_MAX_DEVICES entries, each "GPU-" and
 * hex digits / dashes) into out, *count of them. false on a malformed list
 * (out and *count are then untouched). Exposed for the unit test. */
bool tshim_parse_uuid_list(const char *s, char out[TSHIM_MAX_DEVICES][TSHIM_UUID_LEN],
                           int *count) TS_MUST_CHECK;

/* ---- logging (config.c) ------------------------------------------------------ */
/* logfmt to stderr, only when debug is on, at most 20 lines a second. */
void tshim_log(const char *msg, const char *kvfmt, ...) __attribute__((format(printf, 2, 3)));
#define TSHIM_LOG(...)                                                                             \
    do {                                                                                           \
        if (TSHIM_UNLIKELY(tshim_cfg.debug)) tshim_log(__VA_ARGS__);                               \
    } while (0)

/* ---- the symbols the shim hooks and uses ------------------------------------ */
/* Hooked symbols: X(symbol, PFN type, base name for cuGetProcAddress, minimum
 * cudaVersion of this variant, per-thread-default-stream variant?). */
#define TSHIM_CU_HOOKS(X)                                                                          \
    X(cuMemAlloc_v2, PFN_cuMemAlloc_v3020, "cuMemAlloc", 3020, 0)                                  \
    X(cuMemAllocPitch_v2, PFN_cuMemAllocPitch_v3020, "cuMemAllocPitch", 3020, 0)                   \
    X(cuMemAllocManaged, PFN_cuMemAllocManaged_v6000, "cuMemAllocManaged", 6000, 0)                \
    X(cuMemAllocAsync, PFN_cuMemAllocAsync_v11020, "cuMemAllocAsync", 11020, 0)                    \
    X(cuMemAllocAsync_ptsz, PFN_cuMemAllocAsync_v11020_ptsz, "cuMemAllocAsync", 11020, 1)          \
    X(cuMemAllocFromPoolAsync, PFN_cuMemAllocFromPoolAsync_v11020, "cuMemAllocFromPoolAsync",      \
      11020, 0)                                                                                    \
    X(cuMemAllocFromPoolAsync_ptsz, PFN_cuMemAllocFromPoolAsync_v11020_ptsz,                       \
      "cuMemAllocFromPoolAsync", 11020, 1)                                                         \
    X(cuMemFree_v2, PFN_cuMemFree_v3020, "cuMemFree", 3020, 0)                                     \
    X(cuMemFreeAsync, PFN_cuMemFreeAsync_v11020, "cuMemFreeAsync", 11020, 0)                       \
    X(cuMemFreeAsync_ptsz, PFN_cuMemFreeAsync_v11020_ptsz, "cuMemFreeAsync", 11020, 1)             \
    X(cuMemPoolTrimTo, PFN_cuMemPoolTrimTo_v11020, "cuMemPoolTrimTo", 11020, 0)                    \
    X(cuMemCreate, PFN_cuMemCreate_v10020, "cuMemCreate", 10020, 0)                                \
    X(cuMemRelease, PFN_cuMemRelease_v10020, "cuMemRelease", 10020, 0)                             \
    X(cuArrayCreate_v2, PFN_cuArrayCreate_v3020, "cuArrayCreate", 3020, 0)                         \
    X(cuArray3DCreate_v2, PFN_cuArray3DCreate_v3020, "cuArray3DCreate", 3020, 0)                   \
    X(cuArrayDestroy, PFN_cuArrayDestroy_v2000, "cuArrayDestroy", 2000, 0)                         \
    X(cuMipmappedArrayCreate, PFN_cuMipmappedArrayCreate_v5000, "cuMipmappedArrayCreate", 5000, 0) \
    X(cuMipmappedArrayDestroy, PFN_cuMipmappedArrayDestroy_v5000, "cuMipmappedArrayDestroy", 5000, \
      0)                                                                                           \
    X(cuMemGetInfo_v2, PFN_cuMemGetInfo_v3020, "cuMemGetInfo", 3020, 0)                            \
    X(cuDeviceTotalMem_v2, PFN_cuDeviceTotalMem_v3020, "cuDeviceTotalMem", 3020, 0)                \
    X(cuLaunchKernel, PFN_cuLaunchKernel_v4000, "cuLaunchKernel", 4000, 0)                         \
    X(cuLaunchKernel_ptsz, PFN_cuLaunchKernel_v7000_ptsz, "cuLaunchKernel", 7000, 1)               \
    X(cuLaunchKernelEx, PFN_cuLaunchKernelEx_v11060, "cuLaunchKernelEx", 11060, 0)                 \
    X(cuLaunchKernelEx_ptsz, PFN_cuLaunchKernelEx_v11060_ptsz, "cuLaunchKernelEx", 11060, 1)       \
    X(cuLaunchCooperativeKernel, PFN_cuLaunchCooperativeKernel_v9000, "cuLaunchCooperativeKernel", \
      9000, 0)                                                                                     \
    X(cuLaunchCooperativeKernel_ptsz, PFN_cuLaunchCooperativeKernel_v9000_ptsz,                    \
      "cuLaunchCooperativeKernel", 9000, 1)                                                        \
    X(cuGraphLaunch, PFN_cuGraphLaunch_v10000, "cuGraphLaunch", 10000, 0)                          \
    X(cuGraphLaunch_ptsz, PFN_cuGraphLaunch_v10000_ptsz, "cuGraphLaunch", 10000, 1)                \
    X(cuGetProcAddress, PFN_cuGetProcAddress_v11030, "cuGetProcAddress", 11030, 0)                 \
    X(cuGetProcAddress_v2, PFN_cuGetProcAddress_v12000, "cuGetProcAddress", 12000, 0)

/* Driver functions the shim calls but does not hook. */
#define TSHIM_CU_USED(X)                                                                           \
    X(cuCtxGetDevice, PFN_cuCtxGetDevice_v2000)                                                    \
    X(cuDeviceGetCount, PFN_cuDeviceGetCount_v2000)                                                \
    X(cuDeviceGetMemPool, PFN_cuDeviceGetMemPool_v11020)                                           \
    X(cuDeviceGetUuid_v2, PFN_cuDeviceGetUuid_v11040)                                              \
    X(cuArrayGetMemoryRequirements, PFN_cuArrayGetMemoryRequirements_v11060)                       \
    X(cuMipmappedArrayGetMemoryRequirements, PFN_cuMipmappedArrayGetMemoryRequirements_v11060)     \
    X(cuEventCreate, PFN_cuEventCreate_v2000)                                                      \
    X(cuEventRecord, PFN_cuEventRecord_v2000)                                                      \
    X(cuEventQuery, PFN_cuEventQuery_v2000)                                                        \
    X(cuEventSynchronize, PFN_cuEventSynchronize_v2000)                                            \
    X(cuEventElapsedTime, PFN_cuEventElapsedTime_v2000)                                            \
    X(cuEventDestroy_v2, PFN_cuEventDestroy_v4000)                                                 \
    X(cuStreamIsCapturing, PFN_cuStreamIsCapturing_v10000)                                         \
    X(cuStreamQuery, PFN_cuStreamQuery_v2000)                                                      \
    X(cuThreadExchangeStreamCaptureMode, PFN_cuThreadExchangeStreamCaptureMode_v10010)

/* NVML: X(symbol). Types are declared in nvml_min.h. */
#define TSHIM_NVML_HOOKS(X)                                                                        \
    X(nvmlDeviceGetMemoryInfo)                                                                     \
    X(nvmlDeviceGetMemoryInfo_v2)                                                                  \
    X(nvmlDeviceGetCount)                                                                          \
    X(nvmlDeviceGetCount_v2)                                                                       \
    X(nvmlDeviceGetHandleByIndex)                                                                  \
    X(nvmlDeviceGetHandleByIndex_v2)                                                               \
    X(nvmlDeviceGetHandleByUUID)                                                                   \
    X(nvmlDeviceGetHandleByPciBusId)                                                               \
    X(nvmlDeviceGetHandleByPciBusId_v2)                                                            \
    X(nvmlDeviceGetHandleBySerial)                                                                 \
    X(nvmlDeviceGetIndex)
#define TSHIM_NVML_USED(X) X(nvmlDeviceGetUUID)

enum tshim_sym {
#define TSHIM_ENUM_HOOK(s, p, b, v, t) TSHIM_SYM_##s,
#define TSHIM_ENUM_USED(s, p) TSHIM_SYM_##s,
#define TSHIM_ENUM_NVML(s) TSHIM_SYM_##s,
    TSHIM_CU_HOOKS(TSHIM_ENUM_HOOK) TSHIM_SYM_CU_HOOK_END,
    TSHIM_CU_USED(TSHIM_ENUM_USED) TSHIM_SYM_CU_END,
    TSHIM_NVML_HOOKS(TSHIM_ENUM_NVML) TSHIM_SYM_NVML_HOOK_END,
    TSHIM_NVML_USED(TSHIM_ENUM_NVML) TSHIM_SYM_COUNT
};

/* Real entry points, filled once by tshim_init (driver.c; NULL where the
 * driver lacks one), and the symbols' names. */
extern void *tshim_real[TSHIM_SYM_COUNT];
extern const char *const tshim_sym_name[TSHIM_SYM_COUNT];

#define TSHIM_PFN_HOOK(s, p, b, v, t) typedef p tshim_pfn_##s;
#define TSHIM_PFN_USED(s, p) typedef p tshim_pfn_##s;
TSHIM_CU_HOOKS(TSHIM_PFN_HOOK)
TSHIM_CU_USED(TSHIM_PFN_USED)
#undef TSHIM_PFN_HOOK
#undef TSHIM_PFN_USED

/* REAL(cuMemAlloc_v2)(...) calls the driver. Only valid after tshim_init()
 * (init.h); the tables are driver.c's and interpose.c's. */
#define REAL(s) ((tshim_pfn_##s)tshim_real[TSHIM_SYM_##s])

#endif
