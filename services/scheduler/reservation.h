/* reservation.h: occupancy in Redis, changed only by Lua scripts run by SHA
 * (docs/scheduler.md, "Redis layout"). Amounts are integers in each slot's
 * quantum (cpu in 0.001 cores, mem in bytes, cuda.shares in 0.01 devices).
 *
 *   <p>agent:<id>       hash  cap:<slot>, used:<slot>, devcap:<n>, dev:<n>, schedulable
 *   <p>alloc:<kernel>   hash  session, agent, slots "cpu=1000 mem=1073741824",
 *                             devs "0=50 3=100", usage "kp:AK user:U project:P domain:D"
 *   <p>sess:<session>   int   kernels of the session still holding slots
 *   <p>usage:kp:<ak>, usage:user:<id>, usage:project:<id>, usage:domain:<name>
 *                       hash  <slot> (quanta held), sessions
 *   <p>rebuild          string, present while resv_rebuild runs (reserve refuses)
 *
 * reserve: for each session, all of its kernels or none: creates alloc:<kernel>
 * only if absent and increments occupancy and usage in the same script; refuses
 * without any effect if an agent slot would pass cap:<slot> or a device would
 * pass devcap:<n>. Reserving the same session again answers EXISTS (no effect).
 * release: decrements only if it deletes alloc:<kernel> (exactly once).
 *
 * Uses one Redis connection (rds): one resv per thread. */
#ifndef TESSERA_SCHED_RESERVATION_H
#define TESSERA_SCHED_RESERVATION_H

#include "libcommon/occupancy.h"
#include "libcommon/rds.h"
#include "libcommon/slots.h"

/* The session, kernel and agent records and the key layout are shared with
 * tessera-registry (which writes capacity and rebuilds): libcommon/occupancy.h. */
enum {
    RESV_SCOPE_KEYPAIR = OCC_SCOPE_KEYPAIR,
    RESV_SCOPE_USER = OCC_SCOPE_USER,
    RESV_SCOPE_PROJECT = OCC_SCOPE_PROJECT,
    RESV_SCOPE_DOMAIN = OCC_SCOPE_DOMAIN,
    RESV_SCOPES = OCC_SCOPES
};

typedef occ_dev resv_dev;       /* dev, shares */
typedef occ_kernel resv_kernel; /* kernel_id, agent_id, slots, ndev, dev */
/* One session to reserve: its owner's ids (NULL or "" = none) and its kernels. */
typedef occ_session resv_session;

/* RESV_TAKEN: the session's kernels are reserved already, on other agents
 * than asked: another scheduler instance placed it (and publishes it). */
typedef enum { RESV_OK = 0, RESV_EXISTS, RESV_REFUSED, RESV_TAKEN } resv_status;

typedef struct resv_result {
    resv_status status;
    char reason[200]; /* RESV_REFUSED: "agent a1 device 3 has not enough shares" */
} resv_result;

/* An agent's capacity (what resv_set_agent writes and resv_rebuild takes). */
typedef occ_agent resv_agent;

typedef struct resv resv;

/* prefix: put in front of every key ("" or e.g. "tessera:"); no blanks. */
resv *resv_new(rds *r, const char *prefix);
void resv_free(resv *v);

/* Write an agent's capacity (cap:*, devcap:*, schedulable; occupancy untouched):
 * occ_set_agent. */
bool resv_set_agent(resv *v, const resv_agent *a, ts_err *err) TS_MUST_CHECK;
/* Whether the registry marked the agent drained (agent:<id> field drained). */
bool resv_read_drained(resv *v, const char *id, bool *drained, ts_err *err) TS_MUST_CHECK;
/* Read an agent's capacity and occupancy (dev arrays of SLOTS/32 entries). */
bool resv_read_agent(resv *v, const char *id, slots_t *total, slots_t *used, int *ndev,
                     int32_t dev_cap[32], int32_t dev_used[32], ts_err *err) TS_MUST_CHECK;

/* Reserve n sessions in one script call (each all or nothing, independently).
 * false only when Redis could not be asked (err set); then out is undefined. */
bool resv_reserve(resv *v, const resv_session *s, int n, resv_result *out,
                  ts_err *err) TS_MUST_CHECK;
/* Release kernels; released[i] (released may be NULL) says whether this call
 * freed kernel i (false: it was not reserved, e.g. released before); *count how
 * many it freed. false on a Redis failure (err). */
bool resv_release(resv *v, const char *const *kernel_ids, int n, bool *released, int *count,
                  ts_err *err) TS_MUST_CHECK;

/* Read usage:<usage_id> ("kp:AK", "user:U", ...): sessions holding slots and
 * slots held, by every instance (absent: zero). */
bool resv_read_usage(resv *v, const char *usage_id, int *sessions, slots_t *used,
                     ts_err *err) TS_MUST_CHECK;

/* Rewrite all occupancy from the truth (agents' capacity and the sessions that
 * hold slots, from PostgreSQL and heartbeats): every agent:, alloc:, sess: and
 * usage: key under the prefix is replaced. Reserve refuses while it runs.
 * occ_rebuild, which also writes the <p>occupancy marker. */
bool resv_rebuild(resv *v, const resv_agent *agents, int nagents, const resv_session *sessions,
                  int nsessions, ts_err *err) TS_MUST_CHECK;

/* The invariant: for every agent the sum of alloc:* equals used:* and dev:*,
 * nothing above capacity, usage:* equals the sums per scope, sess:* counts.
 * *holds false: broken (why says where). false on a Redis failure (err). */
bool resv_check_invariant(resv *v, bool *holds, char *why, size_t size, ts_err *err) TS_MUST_CHECK;

#endif
