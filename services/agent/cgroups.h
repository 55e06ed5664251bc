/* cgroups.h: what the agent reads from and cleans up in the cgroup hierarchies
 * runc puts a kernel in (cgroupsPath "/tessera/<kernel-id>").
 *
 * cgroup v1 (with a hybrid cgroup2 mount beside it, as on these hosts): every
 * mounted hierarchy gets a directory tessera/<kernel-id>. Usage comes from
 * cpuacct.usage, memory.usage_in_bytes, memory.max_usage_in_bytes and
 * pids.current, block I/O from blkio.throttle.io_service_bytes_recursive (v2:
 * io.stat); OOM kills from the oom_kill counter in memory.oom_control
 * (kernels >= 4.13), memory.events on a cgroup2-only host. */
#ifndef AGENT_CGROUPS_H
#define AGENT_CGROUPS_H

#include "container.h"

/* "tessera/<kernel-id>": the cgroup of a kernel, relative to each hierarchy root. */
#define CG_PARENT "tessera"

/* Usage of the cgroup rel ("tessera/<id>", or "tessera" for all kernels). */
bool cg_usage(const char *rel, kernel_usage *out, ts_err *err) TS_MUST_CHECK;

/* cgroup v1: the blkio controller keeps per-cgroup byte counts only for
 * devices with a throttle rule, so a 1 PiB/s read rule on every block device
 * in the kernels' parent cgroup makes them count (no limit in practice).
 * cgroup v2's io.stat counts without it: nothing to do there. Best effort. */
void cg_io_accounting(void);

/* How many processes the memory controller killed in rel; false when unknown
 * (no memory hierarchy or no such cgroup). */
bool cg_oom_kills(const char *rel, int64_t *kills) TS_MUST_CHECK;

/* The memory limit of rel in bytes; false when unknown. */
bool cg_memory_limit(const char *rel, int64_t *bytes) TS_MUST_CHECK;

/* Path of file in the hierarchy holding controller ("memory", "cpu", "pids",
 * "name=systemd", "" for cgroup2) into buf; false when not mounted. */
bool cg_path(const char *controller, const char *rel, const char *file, char *buf,
             size_t size) TS_MUST_CHECK;

/* The processes directly in rel (its cgroup.procs, host pids) into pids, at
 * most max: from the pids hierarchy, else memory's, else cgroup2's. The
 * number read; -1 when no hierarchy has rel. */
int cg_procs(const char *rel, int *pids, int max);

/* Remove rel from every hierarchy (children first). Processes must be gone.
 * true when no directory of rel remains. */
bool cg_remove(const char *rel) TS_MUST_CHECK;

/* true when rel exists in any hierarchy (tests, leftover checks). */
bool cg_exists_any(const char *rel) TS_MUST_CHECK;

#endif
