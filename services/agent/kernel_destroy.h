/* kernel_destroy.h: the tasks that end a kernel (kernels.h), run on a
 * worker of the kernel table (kernel_table.h).
 *
 * Destroy: "terminating" saved first (what a restarted agent must find),
 * then runtime_destroy (container.h: SIGTERM, SIGKILL after the grace,
 * mounts, cgroup, network, ports), tried a few times, and the kernel's
 * cuda-shim config removed; "terminated" saved with the exit code (-1 when it
 * never exited) and the reason, then KernelTerminated. A destroy of a kernel
 * already terminated answers again, so the registry can finish.
 *
 * Report-lost: the container vanished (found by the watcher or at start):
 * terminated with -1 and the reason.
 *
 * Promote: a create task of a newer generation (a session restart) first
 * destroys what is left of the current one, then starts the record over with
 * the pending CreateKernel. */
#ifndef AGENT_KERNEL_DESTROY_H
#define AGENT_KERNEL_DESTROY_H

#include "services/agent/kernel_table.h"

void kernel_destroy_run(kernels *ks, krec *k, const ktask *t);
void kernel_report_lost_run(kernels *ks, krec *k, const ktask *t);
/* Before a create task: a pending generation (krec.next_cmd) takes over. */
void kernel_destroy_promote(kernels *ks, krec *k);

#endif
