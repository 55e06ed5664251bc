/* service.h: tessera-scheduler's service around the engine (docs/scheduler.md,
 * "The service"): main.c's start and stop hooks. service.c wires the modules
 * (state.h lists them) and runs the scheduling thread:
 *   - the sessions consumer and the agents consumer (consumers.h) hand events
 *     to the inbox;
 *   - the scheduling thread owns the engine, the model and the reservation
 *     connection: at start-up it loads the state back from Redis
 *     (recovery.h); then it drains the inbox (each event with its session or
 *     agent in the log context), runs a pass per resource group marked dirty
 *     (coalesced) and, every scheduler.sweep_interval, a sweep (Redis loss,
 *     occupancy resync, a pass over every group);
 *   - /metrics and the readiness check "consumers". */
#ifndef TESSERA_SCHED_SERVICE_H
#define TESSERA_SCHED_SERVICE_H

#include "libcommon/svc.h"

bool sched_svc_start(svc *s, ts_err *err) TS_MUST_CHECK;
void sched_svc_stop(svc *s);

#endif
