/* housekeeping.h: the registry's periodic work, on one thread (the reconcile
 * pass on a second one, as it waits on agents):
 *   every registry.lost_check_interval   agents_check_lost (after the first
 *                                        registry.agent_lost_timeout since
 *                                        start, so replayed heartbeats count;
 *                                        held, and again that long after, while
 *                                        the bus or PostgreSQL does not answer
 *                                        or the agent-events consumer is
 *                                        paused: a deaf registry is not a
 *                                        dead agent)
 *   every registry.reconcile_interval    occupancy_check (Redis lost data?),
 *                                        route_sync_pass (app routes recorded,
 *                                        restored after a Redis loss)
 *   every registry.kernel_reconcile_interval reconcile_pass (agents' kernels,
 *                                        stuck sessions, reservations)
 *   every 2 s                            session_enqueued_republish
 *   every registry.pending_check_interval pending_timeout_sweep
 *   every minute                         usage_store_prune (usage samples past
 *                                        registry.usage_sample_retention) */
#ifndef REGISTRY_HOUSEKEEPING_H
#define REGISTRY_HOUSEKEEPING_H

#include "libcommon/svc.h"

bool housekeeping_start(ts_err *err) TS_MUST_CHECK;
void housekeeping_stop(void);

#endif
