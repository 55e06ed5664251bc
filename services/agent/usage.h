/* usage.h: per-kernel resource usage from cgroups and the kernel's veth
 * (runtime_usage), published on tessera.usage.v1 (KernelUsage, key: kernel
 * id) once per heartbeat as the difference since what was reported before.
 *
 * Exact ends: a kernel's first sample starts when its init process started
 * and counts everything its cgroup used since (the counters are cumulative
 * from 0); its final one is read when it is destroyed, after the grace
 * period and before runc removes its cgroup (usage_final). What was reported
 * is kept per kernel (and generation) in memory and in the kernel's dir
 * (runtime_usage_mark_save), so a restarted agent, a stale heartbeat view or a
 * repeated destroy never counts anything twice. */
#ifndef AGENT_USAGE_H
#define AGENT_USAGE_H

#include "libcommon/kbus.h"
#include "services/agent/container.h"
#include "services/agent/gpu_mounts.h"
#include "services/agent/gpu_nvml.h"

#define USAGE_TOPIC "tessera.usage.v1"

typedef struct usage_tracker usage_tracker;

/* gpu_conf_dir: agent.gpu_conf_dir, where each kernel's cuda-shim region is
 * (gpu_usage.h); NULL: no GPU figures. nvml (gpu_nvml.h; NULL: none) and gpu
 * (the devices' host UUIDs) measure the utilisation of the devices the region
 * reports; both are the caller's and outlive the tracker. */
usage_tracker *usage_new(const char *gpu_conf_dir, gpu_nvml *nvml, const gpu_host *gpu);
void usage_free(usage_tracker *u);

/* Who a kernel is (the agent's view of it). */
typedef struct usage_kernel {
    const char *kernel_id, *session_id, *access_key;
    int generation;
    bool running;                /* sampled by usage_publish */
    const char *gpu_devices[16]; /* its GPUs' device ids, in order */
    int n_gpu;
} usage_kernel;

/* Sample every running kernel among ks, publish one KernelUsage each,
 * forget kernels that are no longer among ks (the agent's kernels not yet
 * terminated). Returns the number published. */
int usage_publish(usage_tracker *u, runtime *rt, kbus *bus, const char *agent_id,
                  const usage_kernel *ks, int n);

/* Before a kernel is destroyed: make sure what was reported of it is known
 * (loaded from its dir) and when it started; heartbeats sample it no more
 * (a view taken before it was terminating included), only usage_final. */
void usage_track(usage_tracker *u, runtime *rt, const usage_kernel *k);

/* Its final sample from last (runtime_destroy_with), the difference since
 * what was reported; later samples of that generation are not published.
 * false when it was not published (nothing new, or the bus refused). */
bool usage_final(usage_tracker *u, kbus *bus, const char *agent_id, const usage_kernel *k,
                 const kernel_usage *last) TS_MUST_CHECK;

#endif
