/* store.h: the scheduler's own Redis records (besides reservation.h's layout),
 * read and written on the scheduling thread's connection (x->r):
 *
 *   <p>sched:pending:<session>  string  the SessionEnqueued payload (protobuf), written
 *                               before the event's offset is stored, deleted once the
 *                               session is scheduled (SessionScheduled acknowledged by
 *                               the bus), cancelled or ended
 *   <p>sched:done:<session>     string  tombstone of an ended session (TTL
 *                               scheduler.tombstone_ttl): a late or replayed Enqueued is
 *                               ignored, and a release not yet done is done at start-up
 *   <p>sched:agents             hash    agent id -> "<resource group> <architecture>
 *                               <device ids, comma separated>"
 *   <p>sched:alive              string  present while Redis holds the scheduler's data; its
 *                               absence means Redis lost its data (FLUSHALL, restart)
 *
 * The consumer threads write pending records and tombstones themselves, in one
 * script per batch (consumers.c). What the records are read back for is
 * recovery.c's. */
#ifndef TESSERA_SCHED_STORE_H
#define TESSERA_SCHED_STORE_H

#include "services/scheduler/state.h"

/* "<prefix><kind><id>" (heap); id may be NULL. */
char *sched_key(const char *kind, const char *id);

/* <p><kind><id> exists? */
bool sched_store_exists(sched_svc *x, const char *kind, const char *id, bool *yes,
                        ts_err *err) TS_MUST_CHECK;
/* Write <p>sched:alive. */
bool sched_store_set_alive(sched_svc *x, ts_err *err) TS_MUST_CHECK;

/* ---- agent info ---------------------------------------------------------------------------- */

/* Write one agent's info (not while Redis lost its data; a failure is logged). */
bool sched_store_put_agent_info(sched_svc *x, const char *id,
                                const sched_agent_info *ai) TS_MUST_CHECK;
/* Every agent info record: fn(ctx, id, info) with group, arch, ndev and dev_id set. */
typedef void (*sched_agent_info_fn)(void *ctx, const char *id, const sched_agent_info *ai);
bool sched_store_each_agent_info(sched_svc *x, sched_agent_info_fn fn, void *ctx,
                                 ts_err *err) TS_MUST_CHECK;

/* ---- allocations (alloc:*, reservation.h) -------------------------------------------------- */

/* One alloc:<kernel> record as Redis has it ("" for a field that is missing). */
typedef struct sched_alloc_rec {
    const char *kernel_id, *session_id, *agent_id;
    const char *slots, *devs, *usage; /* "cpu=1000 mem=5", "0=50 3=100", "kp:AK user:U ..." */
} sched_alloc_rec;
typedef void (*sched_alloc_fn)(void *ctx, const sched_alloc_rec *a);
/* Scan every alloc:* record (rare: start-up, a session another instance
 * placed); fn per record with a session and an agent. *scanned: keys seen. */
bool sched_store_each_alloc(sched_svc *x, sched_alloc_fn fn, void *ctx, size_t *scanned,
                            ts_err *err) TS_MUST_CHECK;
/* Kernel ids (heap, *n of them) of a session holding slots per Redis: none
 * unless sess:<id> exists, else a scan of alloc:*. */
bool sched_store_find_kernels(sched_svc *x, const char *session_id, char ***out, int *n,
                              ts_err *err) TS_MUST_CHECK;

/* ---- pending records and tombstones -------------------------------------------------------- */

/* ended[i]: sched:done:<session_ids[i]> exists. */
bool sched_store_ended(sched_svc *x, const char *const *session_ids, size_t n, bool *ended,
                       ts_err *err) TS_MUST_CHECK;
/* Session ids of every pending record (heap; free with sched_store_free_ids). */
bool sched_store_pending_ids(sched_svc *x, char ***ids, size_t *n, ts_err *err) TS_MUST_CHECK;
void sched_store_free_ids(char **ids, size_t n);
/* A pending record decoded: *m NULL when it is gone or does not decode (or names
 * another session). false only when Redis failed. */
bool sched_store_get_pending(sched_svc *x, const char *session_id, Tessera__V1__SessionEnqueued **m,
                             ts_err *err) TS_MUST_CHECK;
/* Write a pending record (again). */
bool sched_store_put_pending(sched_svc *x, const Tessera__V1__SessionEnqueued *m,
                             ts_err *err) TS_MUST_CHECK;
/* Delete the session's pending record after the bus acknowledged what was published. */
void sched_store_unpersist_later(sched_svc *x, const char *session_id);
/* Flush the bus, then delete the records queued by sched_store_unpersist_later
 * (kept for the next flush when the bus does not acknowledge in time). */
void sched_store_unpersist_flush(sched_svc *x);

#endif
