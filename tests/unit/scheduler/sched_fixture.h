/* sched_fixture.h: what the scheduler's engine tests share: slots from
 * text, agents and sessions made in one line, an outcome recorder. */
#ifndef TESTS_SCHED_FIXTURE_H
#define TESTS_SCHED_FIXTURE_H

#include "services/scheduler/engine.h"

/* Slots from their text ("cpu=1 mem=1g"); fails the test when bad. */
slots_t S(const char *text);
/* Agent id of group g with those slots and ndev mock GPUs. */
sched_agent *add_agent(sched_group *g, const char *id, const char *slots, int ndev);

/* The outcomes of an engine pass: what was scheduled where, the last refusal. */
typedef struct rec {
    char scheduled[64][SCHED_ID_MAX];
    char agent[64][SCHED_ID_MAX];
    int n;
    char last_id[SCHED_ID_MAX], last_code[32], last_reason[SCHED_REASON_MAX];
} rec;
void on_outcome(void *ctx, const sched_outcome *o);

typedef struct owner {
    const char *ak, *user, *project, *domain;
} owner;
extern const owner ALICE, BOB;

/* A one-kernel session of owner o; enqueue it in "default". */
sched_session *mk(const char *id, const owner *o, const char *slots, int prio);
void enq(sched_engine *e, sched_session *s);
/* An engine with group "default" of nagents agents a1..aN of agent_slots. */
sched_engine *engine(sched_order order, sched_selector sel, const char *agent_slots, int nagents);

#endif
