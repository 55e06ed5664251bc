/* kernel_events.h: the registry's consumer of tessera.kernel.v1 (group
 * tessera-registry.kernels; lifecycle.c starts it): the agents' kernel events
 * applied to the kernel and its session (docs/sessions.md has the
 * transitions):
 *   KernelPulling     the kernel and a starting session PULLING (progress)
 *   KernelCreating    the kernel CREATING; a PULLING session PREPARING again
 *   KernelStarted     the kernel RUNNING; the session RUNNING once every
 *                     kernel is (SessionRunning); after a destroy, the
 *                     container is destroyed too
 *   KernelExited      the exit code; a batch's main kernel sets the result
 *                     and the session TERMINATING; an interactive session's
 *                     kernel ends it
 *   KernelTerminated  the kernel TERMINATED; the TERMINATING session's last
 *                     one finishes it; a kernel ending on its own ends its
 *                     session in ERROR
 * An event from another agent than the kernel's, or about an older
 * generation (before a restart), is ignored. In a batch, the start path's
 * events of one-kernel sessions go through kernel_steps.c's few statements;
 * the rest one by one (batch_tx.h). */
#ifndef REGISTRY_KERNEL_EVENTS_H
#define REGISTRY_KERNEL_EVENTS_H

#include "libcommon/kbus.h"

/* The batch handler (kbus_batch_handler). */
kbus_result kernel_events_batch(const kbus_msg *msgs, size_t n, void *ctx, ts_err *reason);

/* Apply one kernel event that did not come from the bus (the reconcile pass,
 * reconcile.h, says what an agent reported over HTTP): m is a
 * tessera.v1.Kernel* message (type its full name), applied as the consumer
 * applies it (same guards, one transaction, events published after COMMIT).
 * KBUS_DONE when applied or ignored by the guards. */
kbus_result kernel_events_apply(const char *type, ProtobufCMessage *m, ts_err *err);

#endif
