/* reconcile.h: the periodic pass that compares the system of record
 * (PostgreSQL) with what the agents run, and repairs the difference
 * (docs/operations.md, "Reconciliation"). Every registry.kernel_reconcile_interval,
 * on one registry instance at a time (a PostgreSQL advisory lock):
 *
 *   per ALIVE agent: the database's live kernels there are read first, then
 *   the agent's own list (GET /v1/kernels, terminated ones included):
 *     kernel RUNNING, the agent has no container (none, or terminated)
 *         -> KernelTerminated applied as if the agent had sent it (the
 *            session ends in ERROR, slots released)            kind kernel_lost
 *     kernel RUNNING, the agent's has exited -> KernelExited  kind kernel_exited
 *     kernel PREPARING/PULLING/CREATING/RESTARTING unchanged for
 *     registry.stuck_timeout: the agent runs it -> KernelStarted
 *                                                             kind kernel_started
 *       the agent ended it -> KernelTerminated                kind kernel_lost
 *       the agent has never heard of it -> CreateKernel again kind create_resent
 *     kernel TERMINATING for registry.stuck_timeout: the agent has no
 *       container -> KernelTerminated (the session ends)      kind termination_finished
 *       the agent still runs it -> DestroyKernel again        kind destroy_resent
 *     a kernel the agent runs that the database has ended, does not know or
 *       places elsewhere -> DestroyKernel                     kind orphan_destroyed
 *   sessions (no agent needed), unchanged for registry.stuck_timeout:
 *     SCHEDULED..RESTARTING with every kernel RUNNING -> RUNNING
 *                                                             kind session_running
 *     TERMINATING without a live kernel -> its final status   kind session_ended
 *     SCHEDULED..RESTARTING without a live kernel -> ERROR    kind session_ended
 *   Redis reservations (occupancy_sync.c): see occupancy_verify.
 *
 * A difference between a RUNNING kernel and its agent, and an orphan, is
 * acted on only when the previous pass saw it too (an event in flight
 * settles it in between). Kernel events are applied through the kernel
 * consumer's own code (kernel_events_apply), so every repair makes
 * the status changes, history rows and events (SessionRunning, SessionFailed,
 * SessionTerminated ...) the normal path makes, with a reason starting
 * "reconcile:"; each is recorded as repairs.h says (a WARN line "reconcile
 * repair", tessera_registry_reconcile_repairs_total{kind}). */
#ifndef REGISTRY_RECONCILE_H
#define REGISTRY_RECONCILE_H

#include "libcommon/svc.h"

/* One pass now (housekeeping calls it every registry.kernel_reconcile_interval). */
void reconcile_pass(void);

/* The metrics (tessera_registry_reconcile_*). */
void reconcile_register_metrics(svc *s);

#endif
