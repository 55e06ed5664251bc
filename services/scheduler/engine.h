/* engine.h: the scheduler's core: resource groups (agents + queue + policy),
 * the accounts, the in-memory allocations, and the scheduling pass with
 * predicates, backfill and aging (docs/scheduler.md, "The pass").
 *
 * Not thread-safe: one thread (the scheduler's event loop) drives an engine.
 * The engine does not talk to Redis itself: a pass hands every placement to a
 * reserve hook (reservation.c in production) and rolls it back if the hook
 * refuses, so the model never holds what Redis did not grant. */
#ifndef TESSERA_SCHED_ENGINE_H
#define TESSERA_SCHED_ENGINE_H

#include "services/scheduler/predicates.h"

typedef struct sched_rg_policy {
    sched_order order;
    sched_selector selector;
    int64_t aging_ms; /* a session that did not fit for this long may hold an agent; 0 = never */
    int max_held;     /* agents held at once for aged sessions in this group */
    int lookahead;    /* sessions a pass considers at most, in queue order; 0 = all */
} sched_rg_policy;

/* One kernel's placement. */
typedef struct sched_kplace {
    const sched_kreq *kernel;
    sched_pick pick;
} sched_kplace;

/* What a pass decided for one session (valid during the outcome callback). */
typedef struct sched_outcome {
    const char *group;
    sched_session *session;
    bool scheduled;
    int nk; /* scheduled: one placement per kernel */
    const sched_kplace *k;
    const char *code;    /* not scheduled: machine-readable reason */
    const char *reason;  /* not scheduled: for the user */
    bool reason_changed; /* not scheduled: differs from the last pass */
} sched_outcome;

/* Reserve what the pass placed (Redis). false = refused: the pass undoes it. */
typedef bool (*sched_reserve_fn)(void *ctx, const char *group, const sched_session *s,
                                 const sched_kplace *k, int nk, ts_err *err);
typedef void (*sched_outcome_fn)(void *ctx, const sched_outcome *o);

typedef struct sched_pass_stats {
    int considered, scheduled, unschedulable;
    int memo_hits; /* skipped: a smaller request of the same shape already failed this pass */
    int refused;   /* placed in memory, refused by the reserve hook */
    int held;      /* agents newly held for aged sessions */
    bool stopped;  /* stopped at the look-ahead with sessions left unseen */
} sched_pass_stats;

typedef struct sched_engine sched_engine;

sched_engine *sched_engine_new(void);
void sched_engine_free(sched_engine *e);
sched_accounts *sched_engine_accounts(sched_engine *e);

bool sched_engine_add_group(sched_engine *e, const char *name, const sched_rg_policy *policy,
                            ts_err *err) TS_MUST_CHECK;
void sched_engine_set_policy(sched_engine *e, const char *name, const sched_rg_policy *policy);
sched_group *sched_engine_group(sched_engine *e, const char *name);
sched_queue *sched_engine_queue(sched_engine *e, const char *name);

/* Queue s in its group (takes ownership on success). false with why->code set
 * ("unknown_group", "duplicate", "max_pending") otherwise. */
bool sched_engine_enqueue(sched_engine *e, const char *group, sched_session *s,
                          sched_verdict *why) TS_MUST_CHECK;
/* Remove a pending session (cancelled). false if it is not pending there. */
bool sched_engine_cancel(sched_engine *e, const char *group, const char *session_id) TS_MUST_CHECK;

/* One scheduling pass over a group's queue: at most the policy's lookahead
 * sessions (every one considered counts, memo hits too), so its work is
 * bounded whatever the queue's length; stats->stopped says sessions were left
 * unseen (the caller runs another pass when this one placed some). Returns
 * the number scheduled. */
int sched_engine_pass(sched_engine *e, const char *group, int64_t now_ms, sched_reserve_fn reserve,
                      sched_outcome_fn outcome, void *ctx, sched_pass_stats *stats);

/* A kernel's slots come back (terminated, or its reservation undone):
 * occupancy, accounts and DRF usage. false if the kernel holds nothing here
 * (a second release is harmless). */
bool sched_engine_release(sched_engine *e, const char *kernel_id) TS_MUST_CHECK;
/* Record an allocation that exists already (start-up from Redis/PostgreSQL). */
bool sched_engine_adopt(sched_engine *e, const char *group, const sched_session *s,
                        const sched_kplace *k, int nk, ts_err *err) TS_MUST_CHECK;
size_t sched_engine_alloc_count(const sched_engine *e);

#endif
