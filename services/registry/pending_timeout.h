/* pending_timeout.h: a resource group's pending_timeout (seconds, 0 = none)
 * cancels sessions that have waited PENDING longer than that. The wait counts
 * from creation, or from starts_at when the session asked to start later.
 * The session ends CANCELLED with the reason
 *   "pending timeout: waited more than N s in resource group G"
 * and SessionCancelled (requested_by "registry") tells the scheduler to drop it.
 * Run by the housekeeping thread every registry.pending_check_interval. */
#ifndef REGISTRY_PENDING_TIMEOUT_H
#define REGISTRY_PENDING_TIMEOUT_H

#include "libcommon/common.h"

/* Cancel up to 100 overdue sessions (*cancelled: how many); false on a
 * database error (logged). */
bool pending_timeout_sweep(int *cancelled) TS_MUST_CHECK;

#endif
