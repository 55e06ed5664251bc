/* repairs.h: the record of what the registry's checks repaired (the reconcile
 * pass, reconcile.h; the reservation check, occupancy_sync.h; the app routes'
 * restore, route_sync.h), and their confirmation across passes. A leaf: the
 * checks call it; it calls none of them.
 *
 * Each repair counts in tessera_registry_reconcile_repairs_total{kind} (the
 * collector is reconcile.c's) and logs one WARN line
 *   msg="reconcile repair" kind=... session=... kernel=... agent=... why="..."
 * ("-" for an id not given; docs/operations.md, "Reconciliation"). */
#ifndef REGISTRY_REPAIRS_H
#define REGISTRY_REPAIRS_H

#include "libcommon/common.h"

typedef enum repair_kind {
    RK_KERNEL_LOST = 0,
    RK_KERNEL_EXITED,
    RK_KERNEL_STARTED,
    RK_CREATE_RESENT,
    RK_DESTROY_RESENT,
    RK_TERMINATION_FINISHED,
    RK_ORPHAN_DESTROYED,
    RK_SESSION_RUNNING,
    RK_SESSION_ENDED,
    RK_RESERVATION_STALE,
    RK_RESERVATION_LOST,
    RK_OCCUPANCY_DRIFT,
    RK_ROUTES_RESTORED,
    RK_COUNT
} repair_kind;

/* Count one repair and log it. */
void repairs_record(repair_kind kind, const char *session_id, const char *kernel_id,
                    const char *agent_id, const char *why);

/* The kind's label value ("kernel_lost", ...) and its count since start. */
const char *repairs_kind_name(repair_kind kind);
unsigned long repairs_count(repair_kind kind);

/* Seen in the previous pass too? repairs_suspect records key for the next
 * pass and answers whether the last pass recorded it; repairs_rotate ends a
 * pass. For the checks that act only on a difference seen twice (an event in
 * flight settles it in between). */
bool repairs_suspect(const char *key) TS_MUST_CHECK;
void repairs_rotate(void);

#endif
