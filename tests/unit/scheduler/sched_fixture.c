/* sched_fixture.c: see sched_fixture.h. */
#include "tests/unit/scheduler/sched_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>

slots_t S(const char *text)
{
    slots_t s;
    ts_err err = {{0}};
    if (!slots_parse_text(&s, text, &err)) fail_msg("'%s': %s", text, err.msg);
    return s;
}

sched_agent *add_agent(sched_group *g, const char *id, const char *slots, int ndev)
{
    sched_agent_spec spec = {
        .id = id, .arch = "x86_64", .total = S(slots), .ndev = ndev, .schedulable = true};
    ts_err err = {{0}};
    if (!sched_group_set_agent(g, &spec, &err)) fail_msg("agent %s: %s", id, err.msg);
    return sched_group_agent(g, id);
}

void on_outcome(void *ctx, const sched_outcome *o)
{
    rec *r = ctx;
    if (o->scheduled) {
        ts_strlcpy(r->scheduled[r->n], o->session->id, SCHED_ID_MAX);
        ts_strlcpy(r->agent[r->n], o->k[0].pick.agent->id, SCHED_ID_MAX);
        r->n++;
        return;
    }
    ts_strlcpy(r->last_id, o->session->id, sizeof(r->last_id));
    ts_strlcpy(r->last_code, o->code, sizeof(r->last_code));
    ts_strlcpy(r->last_reason, o->reason, sizeof(r->last_reason));
}

const owner ALICE = {"AKALICE", "alice", "p1", "default"};
const owner BOB = {"AKBOB", "bob", "p1", "default"};

sched_session *mk(const char *id, const owner *o, const char *slots, int prio)
{
    sched_session *s = sched_session_new(id, 1);
    ts_strlcpy(s->access_key, o->ak, sizeof(s->access_key));
    ts_strlcpy(s->user_id, o->user, sizeof(s->user_id));
    ts_strlcpy(s->project_id, o->project, sizeof(s->project_id));
    ts_strlcpy(s->domain, o->domain, sizeof(s->domain));
    s->priority = prio;
    snprintf(s->kernels[0].kernel_id, SCHED_ID_MAX, "%s-k0", id);
    s->kernels[0].slots = S(slots);
    ts_err err = {{0}};
    if (!sched_session_finish(s, &err)) fail_msg("%s", err.msg);
    return s;
}

void enq(sched_engine *e, sched_session *s)
{
    sched_verdict v;
    if (!sched_engine_enqueue(e, "default", s, &v)) fail_msg("enqueue %s: %s", s->id, v.reason);
}

sched_engine *engine(sched_order order, sched_selector sel, const char *agent_slots, int nagents)
{
    sched_engine *e = sched_engine_new();
    sched_rg_policy pol = {.order = order, .selector = sel, .aging_ms = 0, .max_held = 1};
    ts_err err = {{0}};
    assert_true(sched_engine_add_group(e, "default", &pol, &err));
    for (int i = 0; i < nagents; i++) {
        char id[16];
        snprintf(id, sizeof(id), "a%d", i + 1);
        add_agent(sched_engine_group(e, "default"), id, agent_slots, 0);
    }
    return e;
}
