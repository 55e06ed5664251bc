/* publisher.h: what the scheduler publishes on tessera.session.v1, keyed by
 * session id: SessionScheduled (a KernelPlacement per kernel, with a
 * DeviceAllocation per device) and SessionUnschedulable. A failure to publish
 * is logged (the caller's log context names the session). */
#ifndef TESSERA_SCHED_PUBLISHER_H
#define TESSERA_SCHED_PUBLISHER_H

#include "services/scheduler/state.h"

void sched_publish_scheduled(sched_svc *x, const sched_rec *rec);
void sched_publish_unschedulable(sched_svc *x, const char *group, const sched_session *s,
                                 const char *code, const char *reason);

#endif
