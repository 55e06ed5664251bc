/* session_events.h: the registry's consumer of tessera.session.v1 (group
 * tessera-registry.sessions; lifecycle.c starts it). The transitions each
 * event makes are in docs/sessions.md:
 *   SessionScheduled      PENDING -> SCHEDULED -> PREPARING: the kernels
 *                         placed, CreateKernel to their agents; for a session
 *                         that ended or is unknown, SessionTerminated gives
 *                         the reserved slots back. A batch's placements of
 *                         PENDING sessions in placements.c's three statements
 *   SessionUnschedulable  a PENDING session's status_info (the scheduler's
 *                         reason) and a history row when it changed, on its
 *                         own before the batch
 * Everything else on the topic (the registry's own events) is not for it. */
#ifndef REGISTRY_SESSION_EVENTS_H
#define REGISTRY_SESSION_EVENTS_H

#include "libcommon/kbus.h"

/* The batch handler (kbus_batch_handler). */
kbus_result session_events_batch(const kbus_msg *msgs, size_t n, void *ctx, ts_err *reason);

#endif
