/* runtime_destroy.h: removing a kernel from this node (container.h), in this
 * order, every step tried whatever the earlier ones did:
 *   1. the processes: SIGTERM to init and a grace period (only when init
 *      handles SIGTERM: a pid namespace's init without a handler ignores it),
 *      then `runc delete --force` kills what is left and removes the
 *      container and its cgroups;
 *   2. the supervisor sees init end, writes the exit file and leaves (killed
 *      after 3 s);
 *   3. the network: CNI DEL with the plugins that made it (veth, lease,
 *      iptables rules), then the netns and the user namespace;
 *   4. vfolder mounts staged for runc, the overlay rootfs;
 *   5. cgroups runc did not remove;
 *   6. host ports, and the kernel dir (never while anything is mounted below
 *      it); a restart's destroy keeps the kernel's disk, with its /home/work,
 *      for the next generation (runtime_disk.h), any other removes a kept
 *      one too.
 * No leftovers: mounts, cgroups, netns, processes, host ports. Idempotent. */
#ifndef AGENT_RUNTIME_DESTROY_H
#define AGENT_RUNTIME_DESTROY_H

#include "services/agent/container.h"

/* SIGTERM, then SIGKILL after grace_ms; then the rest above. False (err: the
 * first step that failed) when something is left. */
bool runtime_destroy(runtime *rt, const char *kernel_id, int grace_ms, ts_err *err) TS_MUST_CHECK;

typedef struct destroy_opts {
    int grace_ms; /* SIGTERM to SIGKILL */
    /* a restart: the kernel's disk (its /home/work) is kept for the next
     * generation's start (runtime_disk.h) */
    bool keep_home;
    /* not NULL: the kernel's usage (runtime_usage) read after the grace
     * period, just before runc removes its cgroups; *have_last tells whether
     * *last was read (the final sample of the kernel, usage.h) */
    kernel_usage *last;
    bool *have_last;
} destroy_opts;

/* runtime_destroy with those options. */
bool runtime_destroy_with(runtime *rt, const char *kernel_id, const destroy_opts *o,
                          ts_err *err) TS_MUST_CHECK;

/* The same without checking the id or naming the kernel in err (a start that
 * failed half-way cleans up with it). */
bool runtime_teardown(runtime *rt, const char *kernel_id, int grace_ms, ts_err *err) TS_MUST_CHECK;

#endif
