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
 * are duplicates, and a DestroyKernel of a lower generation is stale.
 *
 * The parts: kernel_table.c (the table, its task queues and workers),
 * kernel_rec.c (one kernel's record and meta file), kernel_create.c and
 * kernel_destroy.c (the tasks), kernel_watch.c (exits, retention,
 * tombstones), kernel_adopt.c (after a restart); this file wires them and
 * holds the command handlers and the views. */
#ifndef AGENT_KERNELS_H
#define AGENT_KERNELS_H

#include "libcommon/kbus.h"
#include "libcommon/slots.h"
#include "services/agent/kernel_table.h"
#include "services/agent/service_ports.h"
#include "services/agent/usage.h"
#include "tessera/v1/agent_cmd.pb-c.h"

kernels *kernels_new(const kernels_opts *opts, ts_err *err);
/* Stop the workers and the watcher (tasks in progress finish first). */
void kernels_free(kernels *ks);

/* Before start: kernel_adopt (kernel_adopt.h) re-adopts what an earlier run
 * left. Start the workers and the watcher (polls running kernels every 500 ms). */
bool kernels_start(kernels *ks, ts_err *err) TS_MUST_CHECK;

/* A kernel id the agent accepts: 1 to 63 letters, digits, '-', '_', '.', not
 * starting with '.'. */
bool kernels_valid_id(const char *id) TS_MUST_CHECK;

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
/* Every kernel not yet terminated (with_terminated: tombstones too): the
 * count, and the views in *out (free with kernel_views_free). */
int kernels_snapshot(kernels *ks, bool with_terminated, kernel_view **out);
/* One kernel's view; false when the agent does not know the id. */
bool kernels_get(kernels *ks, const char *kernel_id, kernel_view *out) TS_MUST_CHECK;
void kernel_views_free(kernel_view *v);
/* The kernel as usage.h wants it (pointers into v: keep v while out is used). */
void kernel_view_usage(const kernel_view *v, usage_kernel *out);

#endif
