/* gpu_nvml.h: a kernel's GPU utilisation per device from NVML, when the host
 * has it (the library dlopen'd at start, agent.nvml_library).
 *
 * What NVML measures is per-process SM utilisation (nvmlDeviceGetProcessUtilization):
 * samples of (pid, timestamp, smUtil %) since a last-seen timestamp. A
 * kernel's utilisation on a device is the mean, over the timestamps of the
 * samples of its processes (host pids: its cgroup's cgroup.procs), of the sum
 * of their smUtil at that timestamp, capped at 100. No sample since the last
 * look (NVML_ERROR_NOT_FOUND), or only other processes' samples: 0, measured.
 * Any other answer: not measured. Nothing here invents a number. */
#ifndef AGENT_GPU_NVML_H
#define AGENT_GPU_NVML_H

#include <stdint.h>

#include "libcommon/common.h"

#define GPU_NVML_DEFAULT_LIBRARY "libnvidia-ml.so.1"
#define GPU_NVML_MAX_SAMPLES 4096 /* more than this in one answer: not measured */

typedef struct gpu_nvml gpu_nvml;

/* dlopen library, resolve the four functions, nvmlInit_v2. NULL (logged once
 * at info level: no utilisation) when the library is absent, lacks one of
 * them or its init fails; NULL or "" library: NULL without a log. */
gpu_nvml *gpu_nvml_open(const char *library);
/* nvmlShutdown, dlclose. NULL is fine. */
void gpu_nvml_close(gpu_nvml *n);

/* The utilisation of the processes pids[0..n_pids-1] on the device whose
 * host UUID is uuid ("GPU-..."), over the samples after *last_seen_us
 * (NVML's timestamps, us; 0: all it keeps), into *pct (0..100); *last_seen_us
 * moves to the newest sample seen. false when not measured (no NVML, an
 * unknown device, an NVML error): *pct and *last_seen_us are left as they are. */
bool gpu_nvml_util(gpu_nvml *n, const char *uuid, const int *pids, int n_pids,
                   uint64_t *last_seen_us, double *pct) TS_MUST_CHECK;

#endif
