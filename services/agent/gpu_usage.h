/* gpu_usage.h: a kernel's GPU memory and time from the cuda-shim's shared accounting
 * region (libcommon/cuda_region.h), which the agent finds on the host at
 * <agent.gpu_conf_dir>/<kernel-id>/shared/tessera-cuda.region (the kernel's
 * GPU_SHARED_DIR, gpu_mounts.h) and maps read-only for one look.
 *
 * Device memory in use and its high-water mark, per device (the container's
 * CUDA ordinals: the kernel's devices in order), and the GPU time its launches
 * took (busy_ns, cumulative): the compute-share limiter's estimate, counted only
 * while a share < 1 limits the kernel (busy_counted; a version 1 region, made
 * by a shim from before the upgrade, has none). The agent has no NVML here:
 * utilisation is not read. */
#ifndef AGENT_GPU_USAGE_H
#define AGENT_GPU_USAGE_H

#include "libcommon/common.h"

#define GPU_USAGE_MAX_DEVICES 16

typedef struct gpu_usage {
    int n_devices; /* devices read (at most the n asked for) */
    int64_t mem_bytes[GPU_USAGE_MAX_DEVICES];
    int64_t mem_peak_bytes[GPU_USAGE_MAX_DEVICES];
    bool busy_counted;                      /* busy_ns is counted (limiter on); else it is all 0 */
    int64_t busy_ns[GPU_USAGE_MAX_DEVICES]; /* GPU time since the region was made, ns */
} gpu_usage;

/* The region file of a kernel (heap). */
char *gpu_usage_region_path(const char *gpu_conf_dir, const char *kernel_id);

/* Read the first n devices of the region at path (version 2, or version 1:
 * no GPU time). False (err set) when there is no region (no process of the
 * kernel used CUDA yet), or it is not one (bad magic, version or size). */
bool gpu_usage_read(const char *path, int n, gpu_usage *out, ts_err *err) TS_MUST_CHECK;

#endif
