/* runtime_disk.h: a kernel's disk, what the container writes on this node
 * outside its vfolders (container.h):
 *
 *   <kdir>/disk/upper/ work/   the overlay's upper and work dirs (its root
 *                              file system's changes, /tmp included)
 *   <kdir>/disk/home/          mounted at /home/work
 *   <kdir>/disk/etc/           hosts, hostname, resolv.conf
 *
 * A restart keeps the disk for the kernel's next generation: the destroy
 * (runtime_destroy.h, keep_home) moves it aside to <kernels>/.kept-<id>,
 * the next start takes it back, and the new container gets a fresh upper,
 * work and etc, and the old home. Nothing else of the kernel survives. A
 * kept disk that no start takes (the session ended meanwhile) goes with the
 * kernel's next destroy, or when the agent forgets the kernel. */
#ifndef AGENT_RUNTIME_DISK_H
#define AGENT_RUNTIME_DISK_H

#include "services/agent/runtime_state.h"

#define RDISK_DIR "disk"

/* Make <kdir>/disk with upper, work, home and etc, taking over a kept disk
 * when there is one (its upper, work and etc emptied, its home as it is);
 * *kept says whether one was. kdir exists; its disk does not yet. */
bool rdisk_prepare(runtime *rt, const char *id, const char *kdir, bool *kept,
                   ts_err *err) TS_MUST_CHECK;

/* A restart's destroy, once nothing is mounted below kdir any more: the
 * disk moves to the kept place (a kernel dir of an older agent, with its
 * home at <kdir>/home, has that home moved instead); the caller then removes
 * the kernel dir as in any destroy. False (err) when it could not be kept. */
bool rdisk_keep(runtime *rt, const char *id, const char *kdir, ts_err *err) TS_MUST_CHECK;

/* Remove a kept disk of the kernel (nothing when there is none). */
void rdisk_discard_kept(runtime *rt, const char *id);

/* The host directory mounted at the kernel's /home/work (heap). */
char *rdisk_home(runtime *rt, const char *id);

#endif
