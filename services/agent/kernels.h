/* kernels.h: the kernels of this agent and their life cycle.
 *
 *   pulling -> creating -> running -> exited -> (terminating) -> terminated
 *                  \__________\__________\_______> terminating -> terminated
 *
 * Every kernel has its own queue of tasks (create, destroy, report); a bounded
 * pool of workers runs them, one task of a kernel at a time, so the commands
 * of one kernel are serialized and different kernels proceed in parallel.
 * Image pulls are bounded separately (max_parallel_pulls).
 *
 * What the agent must remember across a restart is kept in
 * <state>/meta/<kernel-id>.json (the CreateKernel command, the status, what
 * was reported), written before a command is acknowledged on the bus: an
 * agent killed at any point resumes from there and from the runtime's own
 * state (container.h). Terminated kernels stay as tombstones for an hour so
 * that a replayed command is recognised and not run twice. A kernel id lives
 * one generation at a time (CreateKernel.generation, docs/events.md): a
 * CreateKernel of a higher generation (a session restart) destroys what is
 * left of the current one and creates the kernel again; lower or equal ones
 * are duplicates, and a DestroyKernel of a lower generation is stale. */
#ifndef AGENT_KERNELS_H
#define AGENT_KERNELS_H

#include "libcommon/kbus.h"
#include "libcommon/slots.h"
#include "services/agent/service_ports.h"
#include "services/agent/container.h"
#include "services/agent/gpu_mounts.h"
#include "tessera/v1/agent_cmd.pb-c.h"

typedef struct kernels kernels;

/* Picks the image store for a reference (insecure registries use a plain-HTTP store). */
typedef image_store *(*kernels_store_fn)(const char *reference, void *ctx);

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
    int64_t exited_retention_ms; /* an exited kernel not destroyed by then is destroyed */
    const char *gpu_conf_dir;    /* where per-kernel cuda-shim configs are written */
    const gpu_host *gpu;         /* shim, device nodes, driver libraries (gpu_mounts.h) */
    const char *term_path;       /* tessera-term on the host (term_app.h), or NULL: no ttyd */
    /* Device memory by device id, for the cuda-shim caps (may be NULL). */
    int64_t (*device_memory)(const char *device_id, void *ctx);
    void *device_ctx;
} kernels_opts;

kernels *kernels_new(const kernels_opts *opts, ts_err *err);
/* Stop the workers and the watcher (tasks in progress finish first). */
void kernels_free(kernels *ks);

/* Before start: read meta/ and the runtime's kernels; running and exited ones
 * are adopted (ids returned, heap array of heap strings), leftovers queued
 * for cleanup or a restart of their creation. */
int kernels_adopt(kernels *ks, char ***adopted_ids);
/* Start the workers and the watcher (polls running kernels every 500 ms). */
bool kernels_start(kernels *ks, ts_err *err) TS_MUST_CHECK;

/* Command handlers (consumer thread): record the intent durably, queue the
 * work, return. KBUS_RETRY when the intent could not be recorded. */
kbus_result kernels_create(kernels *ks, const Tessera__V1__CreateKernel *cmd,
                           const char *correlation_id, ts_err *reason);
kbus_result kernels_destroy(kernels *ks, const Tessera__V1__DestroyKernel *cmd,
                            const char *correlation_id, ts_err *reason);

#define KERNEL_MAX_DEVICES 16

/* The part of a kernel's reservation on one device. */
typedef struct kernel_device {
    char device_id[32];
    char slot_name[32]; /* cuda.device or cuda.shares */
    char amount[32];    /* decimal text as the command had it */
} kernel_device;

/* A kernel as heartbeats and the HTTP API see it. */
typedef struct kernel_view {
    char kernel_id[80];
    char session_id[80];
    char access_key[64];
    char status[16]; /* pulling, creating, running, exited, terminating, terminated */
    char runtime_path[256];
    slots_t slots;
    kernel_device devices[KERNEL_MAX_DEVICES];
    int n_devices;
    kernel_service_port ports[KERNEL_MAX_PORTS]; /* with host ports once running */
    int n_ports;
    int exit_code;  /* when exited */
    int generation; /* CreateKernel.generation of the kernel it is (not a pending one) */
    char reason[256];
} kernel_view;
/* Every kernel not yet terminated (with_terminated: tombstones too). */
int kernels_snapshot(kernels *ks, bool with_terminated, kernel_view **out);
bool kernels_get(kernels *ks, const char *kernel_id, kernel_view *out);
void kernel_views_free(kernel_view *v);

#endif
