/* ownership.h: which pending sessions this instance schedules, when several
 * scheduler instances share the sessions group (docs/scheduler.md, "Several
 * instances"). A session's events are keyed by its id, so they all reach
 * the instance that the group gave the session's partition of
 * tessera.session.v1; that instance, and only it, keeps the session in a
 * queue. The partition is the producer's (kbus_key_partition of the id).
 *
 * At every sweep (scheduling thread), with the consumer's assignment read
 * (an empty one before the consumer first joined changes nothing; after,
 * it means none: more instances than partitions, or the middle of a
 * rebalance, whose next assignment takes them back):
 *   - a queued session whose partition is no longer this instance's leaves
 *     the queue (its pending record stays in Redis: the new owner takes it);
 *   - when the assignment changed, and every scheduler.resync_interval, the
 *     pending records in Redis of the sessions on this instance's
 *     partitions that it does not know are taken
 *     (sched_recovery_take_pending): after a start-up, and from an instance
 *     that stopped or died (the group moved its partitions here; their
 *     SessionEnqueued were handled and committed there, so they are not
 *     delivered again).
 * Two instances that hold one session for a moment (a rebalance between two
 * sweeps) cannot both place it: the reservation script answers the second
 * "taken" (reservation.h), which leaves it to the first. */
#ifndef TESSERA_SCHED_OWNERSHIP_H
#define TESSERA_SCHED_OWNERSHIP_H

#include "services/scheduler/state.h"

void sched_ownership_check(sched_svc *x, int64_t now_ms);
/* Whether the session is on one of this instance's partitions (true while
 * none is known: a single instance before its first assignment). */
bool sched_owns(sched_svc *x, const char *session_id) TS_MUST_CHECK;

#endif
