/* kernel_table.h: the table of this agent's kernels (kernels.h), and the
 * bounded pool of workers that runs their tasks.
 *
 * Every kernel has its own queue of tasks (kernel_rec.h); a ready queue
 * holds the kernels with a task waiting and no task running, and the
 * workers take them in order, one task of a kernel at a time: the commands
 * of one kernel are serialized, different kernels proceed in parallel. What
 * a task does is not known here: the module that wires the table
 * (kernels.c) passes the function that runs one (ktab_run_fn).
 *
 * One mutex (mu) guards the list of records, their statuses and queues;
 * one condition (cv) is signalled when work is queued, a pull slot is freed
 * or the table stops. */
#ifndef AGENT_KERNEL_TABLE_H
#define AGENT_KERNEL_TABLE_H

#include <pthread.h>

#include "libcommon/kbus.h"
#include "services/agent/container.h"
#include "services/agent/gpu_mounts.h"
#include "services/agent/kernel_events.h"
#include "services/agent/kernel_rec.h"

typedef struct kernels kernels;

/* Picks the image store for a reference (insecure registries use a plain-HTTP
 * store): plain_http is CreateKernel.image_plain_http (the registry registered
 * the image's registry with an http:// URL). */
typedef image_store *(*kernels_store_fn)(const char *reference, bool plain_http, void *ctx);

typedef struct kernels_opts {
    const char *agent_id;
    const char *state_dir;   /* meta/ goes below it */
    const char *kernel_host; /* host that serves the kernels' ports (KernelStarted) */
    runtime *rt;
    kernels_store_fn store_for;
    void *store_ctx;
    kbus *bus;
    int max_parallel_pulls;
    int destroy_grace_ms;        /* DestroyKernel with grace_ms 0 */
    int64_t shm_bytes;           /* /dev/shm of every kernel */
    int64_t rootfs_size;         /* a kernel's disk when CreateKernel.rootfs_size is 0 */
    int64_t exited_retention_ms; /* an exited kernel not destroyed by then is destroyed */
    const char *gpu_conf_dir;    /* where per-kernel cuda-shim configs are written */
    const gpu_host *gpu;         /* shim, device nodes, driver libraries (gpu_mounts.h) */
    const char *term_path;       /* tessera-term on the host (term_app.h), or NULL: no ttyd */
    /* Device memory by device id, for the cuda-shim caps (may be NULL). */
    int64_t (*device_memory)(const char *device_id, void *ctx);
    void *device_ctx;
    struct usage_tracker *usage; /* final samples of destroyed kernels (usage.h); may be NULL */
} kernels_opts;

/* Runs one task of k (a worker thread, without the lock; the log context
 * carries the kernel and its session). */
typedef void (*ktab_run_fn)(kernels *ks, krec *k, const ktask *t);

struct kernels {
    kernels_opts o;
    char *meta_dir;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* work queued, pull slot freed, stop */
    krec *all;
    krec *ready_head, *ready_tail;
    int active_pulls;
    bool stop;
    ktab_run_fn run;
    pthread_t *workers;
    int n_workers;
    pthread_t watcher; /* kernel_watch.c */
    bool watching;
};

/* A table with no records; meta/ below opts->state_dir is created. */
kernels *ktab_new(const kernels_opts *opts, ts_err *err);
/* Stop the workers (tasks in progress finish first) and free every record. */
void ktab_free(kernels *ks);
/* Start n workers that run tasks with run. */
bool ktab_start_workers(kernels *ks, int n, ktab_run_fn run, ts_err *err) TS_MUST_CHECK;
/* Tell the workers (and whoever waits on cv) to stop. */
void ktab_stop(kernels *ks);
/* ks->stop, read under the lock. */
bool ktab_stopping(kernels *ks) TS_MUST_CHECK;

/* The following need the caller to hold ks->mu. */
krec *ktab_find(kernels *ks, const char *id);
/* Queue a task for k (a destroy also cancels a creation in progress). */
void ktab_enqueue(kernels *ks, krec *k, ktask_kind kind, const char *reason, int grace_ms);
/* Save k's meta file, best effort: a failure is logged by krec_save and the
 * next save writes the record again. */
void ktab_persist(kernels *ks, const krec *k);

/* The event context of k (kernel_events.h). */
kev_ctx ktab_kev(kernels *ks, const krec *k);
/* Under the lock: the creation's progress status (krec_progress_status), saved. */
void ktab_set_status(kernels *ks, krec *k, const char *status);
/* Under the lock: k terminated with exit_code and reason, saved; then
 * KernelTerminated published. */
void ktab_terminated(kernels *ks, krec *k, int exit_code, const char *reason);
/* Remove the kernel's cuda-shim config dir (gpu_mounts.h), if any. */
void ktab_gpu_cleanup(kernels *ks, const char *id);

#endif
