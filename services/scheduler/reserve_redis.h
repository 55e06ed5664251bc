/* reserve_redis.h: the engine's reserve hook backed by Redis (reservation.c):
 * what a pass placed in memory is reserved by the Lua script, and a refusal
 * (another scheduler instance took the room first) makes the pass undo it. */
#ifndef TESSERA_SCHED_RESERVE_REDIS_H
#define TESSERA_SCHED_RESERVE_REDIS_H

#include "services/scheduler/engine.h"
#include "services/scheduler/reservation.h"

/* Fill out (and kbuf[nk], dbuf[nk * SCHED_MAX_DEVICES]) from a placed session;
 * the strings point into s and k. */
void sched_resv_session(const sched_session *s, const sched_kplace *k, int nk, resv_session *out,
                        resv_kernel *kbuf, resv_dev *dbuf);

/* sched_reserve_fn with ctx = resv *. RESV_EXISTS (a retry) counts as done. */
bool sched_reserve_redis(void *ctx, const char *group, const sched_session *s,
                         const sched_kplace *k, int nk, ts_err *err) TS_MUST_CHECK;

#endif
