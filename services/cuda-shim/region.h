/* region.h: the container's shared accounting region.
 *
 * One file per container, <shared_dir>/tessera-cuda.region, mmap'd MAP_SHARED by
 * every process of the container. It holds the device-memory usage per device
 * (the sum of the per-process slots), one slot per live process (pid + start
 * time, bytes per device) and the compute limiter's token buckets.
 *
 * The check against the cap and the add are one atomic read-modify-write on the
 * device's total (add, and undo if the result is over the cap), so two processes
 * can never pass the cap together and the common case takes no lock (a robust
 * mutex costs ~70 ns, more than the whole budget of a hooked cuMemAlloc). A
 * robust, process-shared mutex serialises the rest: slot registration, reaping,
 * and the retry before an allocation is refused. A holder killed with -9 leaves
 * it EOWNERDEAD; the next locker marks it consistent and reaps the holder. Every
 * update order leaves the total too high, never too low, if a process dies half
 * way. Slots of processes that are gone (pid absent, zombie, or pid reused with
 * another start time) are returned occasionally on lock acquisition and always
 * before an allocation is refused.
 *
 * Without a shared dir the region is anonymous memory (the cap then holds per
 * process tree). */
#ifndef TESSERA_CUDA_SHIM_REGION_H
#define TESSERA_CUDA_SHIM_REGION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "libcommon/cuda_region.h"
#include "services/cuda-shim/shim.h"

/* The layout is shared with the agent, which reads it (libcommon/cuda_region.h). */
#define TSHIM_REGION_MAGIC CUDA_REGION_MAGIC
#define TSHIM_REGION_VERSION CUDA_REGION_VERSION
#define TSHIM_REGION_SLOTS CUDA_REGION_SLOTS
#define TSHIM_REGION_FILE CUDA_REGION_FILE
_Static_assert(TSHIM_MAX_DEVICES == CUDA_REGION_MAX_DEVICES, "one device count");

typedef cuda_region_slot tshim_proc_slot;
typedef cuda_region_bucket tshim_bucket;
typedef cuda_region tshim_region;

/* The region of this process, NULL until tshim_region_attach succeeded. */
extern tshim_region *tshim_reg;

/* Map (creating if needed) the region in dir, or anonymous memory when dir is "".
 * Idempotent and thread-safe. False only if not even anonymous memory could be
 * had (then memory hooks fail closed with CUDA_ERROR_OUT_OF_MEMORY). */
bool tshim_region_attach(void) TS_MUST_CHECK;

/* Map an existing region file read-write without registering (tools, tests). */
tshim_region *tshim_region_map_file(const char *path);

/* Add bytes on dev to the total and this process's slot if that keeps the total
 * within limit (0 = no limit). Atomic with respect to every other process. */
bool tshim_region_reserve(int dev, uint64_t bytes, uint64_t limit) TS_MUST_CHECK;
/* Add without a check (the driver already handed the memory out). */
void tshim_region_force(int dev, uint64_t bytes);
/* Return bytes; never below zero, neither for the slot nor for the total. */
void tshim_region_release(int dev, uint64_t bytes);
/* The container's current usage on dev. */
uint64_t tshim_region_used(int dev);
/* Return the usage of processes that are gone; returns how many were reaped.
 * Takes the lock. */
int tshim_region_reap(void);
/* The same when the lock is free now (0 without waiting when it is held). */
int tshim_region_reap_if_free(void);

/* Lock/unlock for callers outside region.c (the limiter's bucket init). */
bool tshim_region_lock(tshim_region *r) TS_MUST_CHECK;
void tshim_region_unlock(tshim_region *r);

/* Start time (clock ticks since boot) of pid from /proc, 0 if unreadable. */
uint64_t tshim_proc_start_time(int pid);

#endif
