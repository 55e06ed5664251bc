/* sessions.h: the scheduling thread's session work. SessionEnqueued -> a
 * queue; the end of a session -> release (exactly once); the passes, with the
 * reservations batched per pass (many sessions per Redis script call). A
 * session is published as scheduled only after Redis granted it; a refused one
 * is rolled back in the model, its agents resynced from Redis, and it goes
 * back to its queue. Log lines of one session's work name it through the
 * caller's log context (service.c sets it per event). */
#ifndef TESSERA_SCHED_SESSIONS_H
#define TESSERA_SCHED_SESSIONS_H

#include "services/scheduler/state.h"

/* Queue the session (takes m), or publish why not. */
void sched_on_enqueued(sched_svc *x, Tessera__V1__SessionEnqueued *m, int64_t at_us);
/* Cancelled, terminated or failed: off its queue, or its kernels released. */
void sched_on_ended(sched_svc *x, const char *session_id, const char *reason);
/* Release a known session's kernels in Redis then in the model (exactly once);
 * the record goes. */
void sched_release_rec(sched_svc *x, sched_rec *rec);
/* A pass over every group that wants one. */
void sched_run_passes(sched_svc *x);
void sched_batch_free(sched_batch *b);

#endif
