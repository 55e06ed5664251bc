/* shared_limits.h: per-scope limits across scheduler instances
 * (docs/scheduler.md, "Limits with several instances"). Each reservation
 * carries its owner's limits; a refusal for a limit reads the owner's usage
 * back from Redis into the accounts as what the other instances hold. */
#ifndef TESSERA_SCHED_SHARED_LIMITS_H
#define TESSERA_SCHED_SHARED_LIMITS_H

#include "services/scheduler/state.h"

/* The owner's limits per scope, encoded for the reserve script (heap; NULL = none). */
void sched_limits_encode(sched_svc *x, const sched_rec *rec, char *out[RESV_SCOPES]);
/* A reservation was refused for a limit: read the owner's usage back from Redis. */
void sched_limits_refused(sched_svc *x, const sched_rec *rec);
/* Read again the accounts others hold some of (the caller passes every group
 * after it). */
void sched_limits_resync(sched_svc *x);

#endif
