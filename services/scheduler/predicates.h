/* predicates.h: the checks a pending session must pass before the scheduler
 * looks for room, and the accounts they read (limits and current usage per
 * keypair, user, project and domain).
 *
 * Predicates, in the order they are checked (the first failure is the reason):
 *   starts_at      starts_at in the future            "starts at 2030-01-01T00:00:00Z (in 3600 s)"
 *   keypair_concurrency  sessions of the keypair >= max_concurrent_sessions
 *                                                     "keypair concurrency limit 3 reached"
 *   keypair_slots / user_slots / project_slots / domain_slots: usage + request
 *                  above the scope's total slot limit "user total slot limit: cpu 6 in use + 4
 *                                                      requested > 8"
 * and at enqueue time:
 *   max_pending    pending sessions of the keypair >= max_pending_sessions
 *                                                     "keypair pending session limit 5 reached" */
#ifndef TESSERA_SCHED_PREDICATES_H
#define TESSERA_SCHED_PREDICATES_H

#include "services/scheduler/queue.h"

typedef enum {
    SCHED_SCOPE_KEYPAIR = 0,
    SCHED_SCOPE_USER,
    SCHED_SCOPE_PROJECT,
    SCHED_SCOPE_DOMAIN,
    SCHED_SCOPE_COUNT
} sched_scope;

const char *sched_scope_name(sched_scope s); /* "keypair", "user", "project", "domain" */

/* Limits of one keypair / user / project / domain (0 or absent = no limit). */
typedef struct sched_limits {
    int max_concurrent_sessions; /* keypair */
    int max_pending_sessions;    /* keypair */
    slots_t max_slots;           /* slots held at once; only present slots are limited */
} sched_limits;

/* Limits and current usage of one account. sessions and used count what this
 * instance placed; ext_* what other scheduler instances hold, as last read from
 * Redis (sched_account_set_totals). The predicates check the sum. */
typedef struct sched_account {
    sched_limits limits;
    int sessions; /* holding slots (scheduled and not yet released) */
    int pending;
    slots_t used;
    int ext_sessions;
    slots_t ext_used;
} sched_account;

typedef struct sched_accounts sched_accounts;

sched_accounts *sched_accounts_new(void);
void sched_accounts_free(sched_accounts *a);
void sched_accounts_set_limits(sched_accounts *a, sched_scope scope, const char *id,
                               const sched_limits *limits);
/* The account (created empty on first use). */
sched_account *sched_accounts_get(sched_accounts *a, sched_scope scope, const char *id);
/* The account ids of a session per scope. */
void sched_session_scopes(const sched_session *s, const char *ids[SCHED_SCOPE_COUNT]);
/* A session starts (+1) or stops (-1) holding its slots, in every scope. */
void sched_accounts_charge(sched_accounts *a, const sched_session *s, int sign);
/* Kernel-level release: slots back to every scope of the owner (no session count). */
void sched_accounts_release_slots(sched_accounts *a, const char *ids[SCHED_SCOPE_COUNT],
                                  const slots_t *slots);
void sched_accounts_release_session(sched_accounts *a, const char *ids[SCHED_SCOPE_COUNT]);
/* Totals of every instance (Redis usage:<scope>): ext_* := totals - own, at
 * least 0. true when ext_* changed. */
bool sched_account_set_totals(sched_account *acc, int sessions, const slots_t *used) TS_MUST_CHECK;
/* A session enters (+1) or leaves (-1) the queue. */
void sched_accounts_pending(sched_accounts *a, const sched_session *s, int sign);

typedef struct sched_verdict {
    const char *code; /* NULL when passed; else "starts_at", "keypair_concurrency", ... */
    char reason[SCHED_REASON_MAX];
} sched_verdict;

/* true when s may be scheduled now; otherwise out says why. */
bool sched_predicates_check(sched_accounts *a, const sched_session *s, int64_t now_ms,
                            sched_verdict *out) TS_MUST_CHECK;
/* true when s may enter the queue (max pending). */
bool sched_predicates_enqueue(sched_accounts *a, const sched_session *s,
                              sched_verdict *out) TS_MUST_CHECK;

#endif
