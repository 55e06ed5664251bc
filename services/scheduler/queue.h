/* queue.h: the pending sessions of one resource group and the order in which a
 * scheduling pass considers them: priority bands (higher first), then within a
 * band fifo (oldest first), lifo (newest first) or drf (dominant resource
 * fairness: the user whose usage in this resource group has the lowest
 * dominant share goes first; that user's own sessions in fifo order).
 *
 * Costs: push and take O(1) amortized (plus a binary search over the
 * priority bands); nothing is sorted. An iterator costs what it hands out
 * (plus, under drf, the band's users per session handed out), never the
 * length of the queue, so a pass that stops after N sessions did O(N) work. */
#ifndef TESSERA_SCHED_QUEUE_H
#define TESSERA_SCHED_QUEUE_H

#include "services/scheduler/placement.h"

typedef enum { SCHED_FIFO = 0, SCHED_LIFO, SCHED_DRF } sched_order;

bool sched_order_parse(const char *name, sched_order *out) TS_MUST_CHECK;
const char *sched_order_name(sched_order o);

/* What one kernel asks for. */
typedef struct sched_kreq {
    char kernel_id[SCHED_ID_MAX];
    slots_t slots;
    char agent[SCHED_ID_MAX]; /* this kernel on this agent ("" = the session's rule) */
} sched_kreq;

/* A pending session. The identity fields are the caller's to fill; the state
 * fields belong to the scheduler. */
typedef struct sched_session {
    char id[SCHED_ID_MAX];
    char access_key[SCHED_ID_MAX];
    char user_id[SCHED_ID_MAX];
    char project_id[SCHED_ID_MAX];
    char domain[SCHED_ID_MAX];
    char arch[SCHED_ARCH_MAX]; /* "" = any */
    int priority;              /* higher first */
    int64_t enqueued_at_ms;
    int64_t starts_at_ms;     /* 0 = as soon as possible */
    bool multi_node;          /* kernels may go on different agents */
    char agent[SCHED_ID_MAX]; /* every kernel on this agent ("" = any: the selector's choice) */
    int nkernels;
    sched_kreq *kernels; /* owned (sched_session_free) */
    /* state */
    slots_t total; /* sum of the kernels (sched_session_new computes it) */
    uint64_t seq;  /* enqueue order */
    int attempts;
    int64_t first_skipped_ms;      /* first time it did not fit (0 = never): aging */
    char held_agent[SCHED_ID_MAX]; /* agent held for it while aged ("" = none) */
    char reason[SCHED_REASON_MAX];
    char reason_code[32];
    int qpos; /* position in its priority band (-1 when not queued) */
    int upos; /* position in its user's list in that band (-1 when not queued) */
} sched_session;

/* A session with n kernels (ids and slots filled by the caller, then
 * sched_session_finish sums them; false if the sum overflows). */
sched_session *sched_session_new(const char *id, int nkernels);
bool sched_session_finish(sched_session *s, ts_err *err) TS_MUST_CHECK;
void sched_session_free(sched_session *s);

typedef struct sched_queue sched_queue;

sched_queue *sched_queue_new(sched_order order);
/* Frees the queue and every session still in it. */
void sched_queue_free(sched_queue *q);
sched_order sched_queue_order(const sched_queue *q);
void sched_queue_set_order(sched_queue *q, sched_order order);
/* Takes ownership of s; false (s not taken) if a session with its id is queued. */
bool sched_queue_push(sched_queue *q, sched_session *s, ts_err *err) TS_MUST_CHECK;
sched_session *sched_queue_find(const sched_queue *q, const char *id);
/* Unlink s from the queue (the caller owns it afterwards). */
void sched_queue_take(sched_queue *q, sched_session *s);
size_t sched_queue_len(const sched_queue *q);

/* DRF: usage of a user in this resource group (charged by the engine). */
void sched_queue_charge(sched_queue *q, const char *user_id, const slots_t *slots, int sign);
const slots_t *sched_queue_user_usage(const sched_queue *q, const char *user_id);

/* One pass over the queue in scheduling order. capacity: the group's (DRF).
 * Sessions taken from the queue during the pass are skipped; sessions pushed
 * during the pass are seen by the next one. While an iterator is open the
 * queue is not compacted (positions hold); freeing the last one tidies it. */
typedef struct sched_queue_iter sched_queue_iter;
sched_queue_iter *sched_queue_iter_new(sched_queue *q, const slots_t *capacity);
sched_session *sched_queue_iter_next(sched_queue_iter *it);
void sched_queue_iter_free(sched_queue_iter *it);

#endif
