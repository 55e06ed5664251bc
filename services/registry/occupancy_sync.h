/* occupancy_sync.h: the registry's side of the Redis occupancy layout
 * (libcommon/occupancy.h): agents' capacity from their announcements, and the
 * rebuild from PostgreSQL after Redis lost its data.
 *
 * Detection (occupancy_check, run every registry.reconcile_interval): Redis
 * lacks the <p>occupancy marker that every rebuild writes (FLUSHALL, a Redis
 * restart without persistence), or lacks the agent:<id> hash of an ALIVE
 * agent. Then the truth is written again: every agent that is ALIVE or is
 * named by a kernel holding slots (its capacity; schedulable only when ALIVE
 * and not drained)
 * and every kernel with holds_slots (the reservation the scheduler made, with
 * its owner's usage scopes). The registry also rebuilds once at start-up. */
#ifndef REGISTRY_OCCUPANCY_SYNC_H
#define REGISTRY_OCCUPANCY_SYNC_H

#include "libcommon/occupancy.h"
#include "libcommon/svc.h"
#include "libcommon/slots.h"

/* The calling thread's occ (on its Redis connection). */
occ *occupancy_handle(ts_err *err);

/* Capacity from an agent's stored slots and devices JSON (agents.slots,
 * agents.devices); dev_cap has OCC_MAX_DEVICES entries. GPU devices (slot
 * "cuda.device") are indexed in their announced order, as the scheduler does. */
bool occupancy_agent_capacity(json_t *slots, json_t *devices, slots_t *total, int32_t *dev_cap,
                              int *ndev, ts_err *err) TS_MUST_CHECK;

/* An agent's capacity to Redis: schedulable when alive (ALIVE) and not
 * drained (registry.agents.schedulable false), and the drained mark the
 * scheduler reads at its start. */
bool occupancy_write_agent(const char *id, json_t *slots, json_t *devices, bool alive, bool drained,
                           ts_err *err) TS_MUST_CHECK;

/* Rebuild everything from PostgreSQL now. First the rebuild lock is taken
 * (the scheduler's reservations are refused meanwhile) and the reservations
 * in flight (made by the scheduler, not yet recorded as holding slots) get
 * up to 2 s to be recorded, so that the snapshot holds them; any still in
 * flight after that are dropped, and the reconcile pass restores them
 * (reservation_lost). */
bool occupancy_rebuild(ts_err *err) TS_MUST_CHECK;

typedef struct occupancy_counts {
    int agents, sessions, kernels;
} occupancy_counts;

/* The same on request (POST /v1/admin/occupancy/recalculate, Backend.AI's
 * recalculate-usage), strict: waits up to settle_ms for the placements in
 * flight, and when some are still in flight rebuilds nothing (*busy, err
 * says how many). *counts: what was written. */
bool occupancy_recalculate(int settle_ms, occupancy_counts *counts, bool *busy,
                           ts_err *err) TS_MUST_CHECK;

/* Rebuild when Redis looks empty; true when it did (or nothing was needed),
 * false on an error (logged). */
bool occupancy_check(void) TS_MUST_CHECK;

/* POST /v1/admin/occupancy/recalculate (superadmins): occupancy_recalculate. */
void occupancy_routes(svc *s);

/* The reconcile pass's check of the reservations (reconcile.h), every
 * registry.kernel_reconcile_interval:
 *   Redis inconsistent with itself (occ_check: an agent's used:* is not the sum
 *   of its allocations, ...)                 -> rebuild    kind occupancy_drift
 *   alloc:<kernel> whose kernel the database does not know, or has ended (kernel
 *   or session final), seen in two passes    -> released   kind reservation_stale
 *   a kernel with holds_slots but no alloc:, seen in two passes
 *                                            -> rebuild    kind reservation_lost
 * A reservation of a kernel still PENDING is the scheduler's in flight: left. */
void occupancy_verify(void);

/* Rebuilds done since start (metrics, tests). */
unsigned long occupancy_rebuilds(void);

#endif
