/* consumers.h: tessera.session.v1 and tessera.agent.v1 -> the scheduling
 * thread's inbox (state.h). The durable part of a session event happens on
 * the consumer thread, before the handler returns (and so before its offset
 * is stored):
 *   SessionEnqueued  -> <p>sched:pending:<id> = the payload, unless the session
 *                       ended already (tombstone) or holds slots (a replay);
 *   SessionCancelled / SessionTerminated / SessionFailed
 *                    -> tombstone <p>sched:done:<id>, pending record deleted;
 *                       the release itself runs on the scheduling thread, and at
 *                       start-up for tombstoned sessions that still hold slots.
 * The sessions consumer (group tessera-scheduler.sessions) takes events in
 * batches; the agents consumer is a broadcast group per instance (every
 * instance sees every agent). */
#ifndef TESSERA_SCHED_CONSUMERS_H
#define TESSERA_SCHED_CONSUMERS_H

#include "services/scheduler/state.h"

bool sched_consumers_start(sched_svc *x, ts_err *err) TS_MUST_CHECK;
void sched_consumers_stop(sched_svc *x);
/* An inbox event and what it owns. */
void sched_ev_free(sched_ev *ev);

#endif
