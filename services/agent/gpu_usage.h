/* gpu_usage.h: a kernel's GPU memory from the cuda-shim's shared accounting
 * region (libcommon/cuda_region.h), which the agent finds on the host at
 * <agent.gpu_conf_dir>/<kernel-id>/shared/tessera-cuda.region (the kernel's
 * GPU_SHARED_DIR, gpu_mounts.h) and maps read-only for one look.
 *
 * Device memory in use and its high-water mark, per device (the container's
 * CUDA ordinals: the kernel's devices in order). The region has no compute
 * time (its token buckets hold what is left of a share, not what was used)
 * and the agent has no NVML here: utilisation is not read. */
#ifndef AGENT_GPU_USAGE_H
#define AGENT_GPU_USAGE_H

#include "libcommon/common.h"

#define GPU_USAGE_MAX_DEVICES 16

typedef struct gpu_usage {
    int n_devices; /* devices read (at most the n asked for) */
    int64_t mem_bytes[GPU_USAGE_MAX_DEVICES];
    int64_t mem_peak_bytes[GPU_USAGE_MAX_DEVICES];
} gpu_usage;

/* The region file of a kernel (heap). */
char *gpu_usage_region_path(const char *gpu_conf_dir, const char *kernel_id);

/* Read the first n devices of the region at path. False (err set) when there
 * is no region (no process of the kernel used CUDA yet), or it is not one
 * (bad magic, version or size). */
bool gpu_usage_read(const char *path, int n, gpu_usage *out, ts_err *err) TS_MUST_CHECK;

#endif
