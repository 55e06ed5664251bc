/* lifecycle.h: consumers of tessera.session.v1 (group
 * tessera-registry.sessions: SessionScheduled, SessionUnschedulable; the
 * registry's own events on that topic are skipped) and tessera.kernel.v1
 * (group tessera-registry.kernels: the agents' kernel events). The transitions
 * each event makes are in docs/sessions.md. */
#ifndef REGISTRY_LIFECYCLE_H
#define REGISTRY_LIFECYCLE_H

#include "registry.h"
#include "transitions.h"

bool lifecycle_start(svc *s, ts_err *err) TS_MUST_CHECK;

/* Apply one kernel event that did not come from the bus (the reconcile pass,
 * reconcile.h, says what an agent reported over HTTP): m is a
 * tessera.v1.Kernel* message (type its full name), applied as the kernel
 * consumer applies it (same guards, one transaction, events published after
 * COMMIT). KBUS_DONE when applied or ignored by the guards. */
kbus_result lifecycle_apply_kernel_event(const char *type, ProtobufCMessage *m,
                                         ts_err *err) TS_MUST_CHECK;

/* Inside the caller's transaction on the locked session s (not RUNNING, not
 * ended): when every kernel of the session is RUNNING, the session becomes
 * RUNNING and SessionRunning goes into ob. *moved says whether it did. */
bool lifecycle_running_if_all_up(PGconn *conn, outbox *ob, sess *s, bool *moved,
                                 ts_err *err) TS_MUST_CHECK;
void lifecycle_stop(void);

/* Inside the caller's transaction on the locked TERMINATING session s whose
 * kernels have all ended: its final status (TERMINATED, or ERROR for an
 * interactive session whose kernel failed) and the event that says so. */
bool lifecycle_finish(PGconn *conn, outbox *ob, sess *s, ts_err *err) TS_MUST_CHECK;

#endif
