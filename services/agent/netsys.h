/* netsys.h: where the agent reads its network devices in sysfs.
 *
 * sysfs lists the network devices of the namespace it was mounted in, not of
 * the process reading it: an agent in a network namespace of its own (each
 * node of the multi-node dev stack, deploy/dev/nodes.sh) would read the
 * host's devices under /sys/class/net. Such an agent mounts a sysfs of its
 * own namespace at <agent.state_dir>/sys (read-only, in the host's mount
 * namespace: the agent never leaves it, so kernels' mounts stay visible to
 * the host and to a restarted agent) and reads there; an agent in the host's
 * namespace reads /sys. One root per process. */
#ifndef AGENT_NETSYS_H
#define AGENT_NETSYS_H

#include "libcommon/common.h"

#include <stddef.h>

/* Decide the root: /sys when it lists the devices of this process's network
 * namespace (/proc/self/net/dev), else a sysfs mounted at <state_dir>/sys
 * (an earlier agent's mount there is replaced). False with err when that
 * mount fails. */
bool netsys_setup(const char *state_dir, ts_err *err) TS_MUST_CHECK;
/* "<root>/class/net/<ifname>/<rel>" into buf (rel may be "" for the device). */
void netsys_path(char *buf, size_t size, const char *ifname, const char *rel);
/* Unmount the agent's own sysfs, if it mounted one. */
void netsys_teardown(void);

#endif
