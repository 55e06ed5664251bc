/* kernel_watch.h: the watcher of the kernel table (kernels.h): a thread that
 * every 500 ms
 *   - asks the runtime for the state of each running kernel (and each exited
 *     one whose exit is not yet reported): an exit is saved and reported
 *     (KernelExited), a container that vanished gets a report-lost task;
 *   - destroys an exited kernel nobody destroyed within
 *     kernels_opts.exited_retention_ms;
 *   - forgets tombstones (terminated records) after an hour, meta file
 *     included: until then a replayed command is recognised. */
#ifndef AGENT_KERNEL_WATCH_H
#define AGENT_KERNEL_WATCH_H

#include "services/agent/kernel_table.h"

/* Start the watcher thread (stopped by ktab_stop, then joined by kernel_watch_join). */
bool kernel_watch_start(kernels *ks, ts_err *err) TS_MUST_CHECK;
void kernel_watch_join(kernels *ks);

#endif
