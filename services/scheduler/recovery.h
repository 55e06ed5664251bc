/* recovery.h: the scheduler's state back from Redis, at start-up and after
 * Redis lost its data (docs/scheduler.md, "The pending queue survives a restart", "Redis loss").
 *
 * Start-up (sched_recovery_load): agents from <p>sched:agents + agent:<id>
 * capacity; allocations from alloc:* adopted into the engine (a tombstoned
 * session's are released now); occupancy resynced from agent:<id>. Then,
 * once the group assigned partitions (ownership.c calls
 * sched_recovery_take_pending), every <p>sched:pending:<id> of a session on
 * them is queued again, or, when the session already holds slots (a
 * scheduler died between the reservation and the bus acknowledging
 * SessionScheduled), SessionScheduled is published again (consumers apply it
 * idempotently).
 *
 * Redis loss (<p>sched:alive missing, checked by each sweep): no passes; wait
 * for the registry's rebuild (agent:* back and no <p>rebuild lock), or after
 * scheduler.rebuild_after rebuild occupancy from this instance's own model;
 * then pending records and agent info are written again and the model
 * resynced. */
#ifndef TESSERA_SCHED_RECOVERY_H
#define TESSERA_SCHED_RECOVERY_H

#include "services/scheduler/state.h"

/* Start-up, on the scheduling thread before it takes events: agents and
 * allocations (every instance's); not the pending records. */
bool sched_recovery_load(sched_svc *x, ts_err *err) TS_MUST_CHECK;
/* The pending records this instance owns (owns(x, session id)) and does not
 * know yet: each queued again, or, when the session already holds slots (its
 * scheduler died between the reservation and the bus acknowledging
 * SessionScheduled; another instance's included), SessionScheduled
 * published again from what Redis holds; the records of ended sessions
 * deleted. *taken: queued plus republished. */
bool sched_recovery_take_pending(sched_svc *x, bool (*owns)(sched_svc *x, const char *id),
                                 int *taken, ts_err *err) TS_MUST_CHECK;
/* The sweep: notice a Redis loss (x->redis_lost), and recover from it. */
void sched_recovery_check_loss(sched_svc *x);

#endif
