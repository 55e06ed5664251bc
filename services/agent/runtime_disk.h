/* runtime_disk.h: a kernel's disk, what the container writes on this node
 * outside its vfolders (container.h):
 *
 *   <kdir>/disk/upper/ work/   the overlay's upper and work dirs (its root
 *                              file system's changes, /tmp included)
 *   <kdir>/disk/home/          mounted at /home/work
 *   <kdir>/disk/etc/           hosts, hostname, resolv.conf
 *
 * With a size (kernel_spec.disk_bytes) the disk is a file system of its own
 * of that size: <kdir>/disk.img, a sparse file made ext4 (no journal) and
 * mounted on <kdir>/disk through a loop device (loopdev.h). A write past it
 * fails with ENOSPC inside the container, nothing else is affected; and the
 * bind mounts from it (/home/work, the /etc files) show paths within it in
 * the container's /proc/self/mountinfo (/home, /etc/hosts), not the host's.
 * Without a size, or where loop devices or mkfs.ext4 are missing (the
 * runtime says so at its start: runtime_disk_limits), the disk is a plain
 * directory.
 *
 * A restart keeps the disk for the kernel's next generation: the destroy
 * (runtime_destroy.h, keep_home) moves it aside to <kernels>/.kept-<id>/
 * (disk/ and disk.img, unmounted), the next start takes it back, and the
 * new container gets a fresh upper, work and etc, and the old home, on a
 * disk of the old size. Nothing else of the kernel survives. A kept disk
 * that no start takes (the session ended meanwhile) goes with the kernel's
 * next destroy, or when the agent forgets the kernel. */
#ifndef AGENT_RUNTIME_DISK_H
#define AGENT_RUNTIME_DISK_H

#include "services/agent/runtime_state.h"

#define RDISK_DIR "disk"
#define RDISK_IMAGE "disk.img"
/* the smallest size limit: smaller ones are raised to it */
#define RDISK_MIN_BYTES (16LL << 20)

/* At the runtime's start: whether size-limited disks can be made here
 * (rt->disk_images, rt->mkfs; rt->disk_why when not). */
void rdisk_setup(runtime *rt);

/* Make <kdir>/disk with upper, work, home and etc, of size bytes when size
 * > 0 and disks can be limited here, taking over a kept disk when there is
 * one (its upper, work and etc emptied, its home as it is, its size as it
 * was); *kept says whether one was. kdir exists; its disk does not yet. */
bool rdisk_prepare(runtime *rt, const char *id, const char *kdir, int64_t size, bool *kept,
                   ts_err *err) TS_MUST_CHECK;

/* Whether the kernel's disk is a file system of its own (a size was set and
 * enforced). */
bool rdisk_sized(const char *kdir) TS_MUST_CHECK;

/* A copy of the read-only host file src on a sized disk, at
 * <kdir>/disk/.tessera/<name> (root's, mode 0555), for a bind mount that
 * shows a path within the disk rather than the host's in the container's
 * mountinfo: its path (heap), or NULL (err) when it could not be made. */
char *rdisk_stage_file(const char *kdir, const char *src, const char *name, ts_err *err);

/* Unmount the disk's file system (lazily if busy); true when nothing is
 * mounted there any more (also when it was a plain directory). */
bool rdisk_unmount(const char *kdir, ts_err *err) TS_MUST_CHECK;

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
