/* test_engine_pinning.c: sessions pinned to agents (agentList: one agent
 * for every kernel, or one per kernel of a multi-node session), drained
 * agents, and a multi-node session with room for only some of its kernels,
 * through the scheduler's engine. */
#include "services/scheduler/engine.h"
#include "tests/unit/scheduler/sched_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

/* agentList: a designated session goes to its agent or waits, saying why;
 * the sessions behind it are not held up. */
static void test_designated_agent(void **state)
{
    (void)state;
    sched_engine *e = engine(SCHED_FIFO, SCHED_CONCENTRATED, "cpu=2 mem=16g", 3);
    const char *const to[] = {"a3", "a3", "a3", "nope", "a1"};
    const char *const want[] = {"", "", "no_capacity", "no_agent", "too_big"};
    for (int i = 0; i < 5; i++) {
        char id[8];
        snprintf(id, sizeof(id), "d%d", i + 1);
        sched_session *s = mk(id, &ALICE, i == 4 ? "cpu=4" : "cpu=1", 0);
        ts_strlcpy(s->agent, to[i], sizeof(s->agent));
        enq(e, s);
    }
    /* two kernels of a multi-node session, both on the designated a2 */
    sched_session *m = sched_session_new("dm", 2);
    ts_strlcpy(m->user_id, "u", sizeof(m->user_id));
    m->multi_node = true;
    ts_strlcpy(m->agent, "a2", sizeof(m->agent));
    for (int i = 0; i < 2; i++) {
        snprintf(m->kernels[i].kernel_id, SCHED_ID_MAX, "dm-k%d", i);
        m->kernels[i].slots = S("cpu=1");
    }
    ts_err err = {{0}};
    assert_true(sched_session_finish(m, &err));
    enq(e, m);
    enq(e, mk("free", &BOB, "cpu=1", 0));
    rec r = {0};
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, NULL), 4);
    assert_string_equal(r.scheduled[0], "d1");
    assert_string_equal(r.agent[0], "a3");
    assert_string_equal(r.scheduled[1], "d2");
    assert_string_equal(r.agent[1], "a3");
    assert_string_equal(r.scheduled[2], "dm");
    assert_string_equal(r.scheduled[3], "free");
    assert_string_equal(r.agent[3], "a1");
    sched_group *g = sched_engine_group(e, "default");
    assert_int_equal(slots_get(&sched_group_agent(g, "a2")->used, SLOT_CPU), 2000);
    sched_queue *q = sched_engine_queue(e, "default");
    for (int i = 2; i < 5; i++) {
        char id[8];
        snprintf(id, sizeof(id), "d%d", i + 1);
        sched_session *s = sched_queue_find(q, id);
        assert_non_null(s);
        assert_string_equal(s->reason_code, want[i]);
        assert_non_null(strstr(s->reason, to[i]));
    }
    /* a3 frees: d3 goes there */
    assert_true(sched_engine_release(e, "d1-k0"));
    memset(&r, 0, sizeof(r));
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, NULL), 1);
    assert_string_equal(r.scheduled[0], "d3");
    assert_string_equal(r.agent[0], "a3");
    sched_engine_free(e);
}

/* A drained agent takes nothing new, and the reasons say so. */
static void test_drained_agents(void **state)
{
    (void)state;
    sched_engine *e = engine(SCHED_FIFO, SCHED_CONCENTRATED, "cpu=2 mem=16g", 2);
    sched_group *g = sched_engine_group(e, "default");
    sched_agent *a1 = sched_group_agent(g, "a1"), *a2 = sched_group_agent(g, "a2");
    a1->drained = true;
    sched_group_set_schedulable(g, a1, false);
    sched_session *d = mk("to-a1", &ALICE, "cpu=1", 0);
    ts_strlcpy(d->agent, "a1", sizeof(d->agent));
    enq(e, d);
    enq(e, mk("any", &BOB, "cpu=1", 0));
    rec r = {0};
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, NULL), 1);
    assert_string_equal(r.scheduled[0], "any");
    assert_string_equal(r.agent[0], "a2"); /* concentrated would take a1 first */
    sched_session *s = sched_queue_find(sched_engine_queue(e, "default"), "to-a1");
    assert_non_null(s);
    assert_string_equal(s->reason_code, "agent_drained");
    assert_string_equal(s->reason, "designated agent a1 is drained");
    /* every agent drained: the group's reason counts them */
    a2->drained = true;
    sched_group_set_schedulable(g, a2, false);
    char why[SCHED_REASON_MAX];
    slots_t req = S("cpu=1");
    assert_int_equal(sched_group_explain(g, &req, "", "x", why, sizeof(why)), SCHED_FIT_NO_AGENT);
    assert_string_equal(why, "no schedulable agent in resource group default (2 drained)");
    /* undrained: the designated session goes there */
    a1->drained = false;
    sched_group_set_schedulable(g, a1, true);
    memset(&r, 0, sizeof(r));
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, NULL), 1);
    assert_string_equal(r.scheduled[0], "to-a1");
    assert_string_equal(r.agent[0], "a1");
    sched_engine_free(e);
}

/* A multi-node session of n kernels, kernel i on agents[i] ("": any). */
static sched_session *mk_kernels(const char *id, int n, const char *const *agents)
{
    sched_session *m = sched_session_new(id, n);
    ts_strlcpy(m->user_id, "u", sizeof(m->user_id));
    m->multi_node = true;
    for (int i = 0; i < n; i++) {
        snprintf(m->kernels[i].kernel_id, SCHED_ID_MAX, "%s-k%d", id, i);
        m->kernels[i].slots = S("cpu=1");
        ts_strlcpy(m->kernels[i].agent, agents[i], SCHED_ID_MAX);
    }
    ts_err err = {{0}};
    if (!sched_session_finish(m, &err)) fail_msg("%s", err.msg);
    return m;
}

/* agentList with one agent per kernel: each kernel on its own, all or none;
 * a kernel whose agent cannot take it says why in that agent's words. */
static void test_agent_per_kernel(void **state)
{
    (void)state;
    sched_engine *e = engine(SCHED_FIFO, SCHED_CONCENTRATED, "cpu=2 mem=16g", 3);
    enq(e, mk_kernels("pk", 3, (const char *const[]){"a1", "a2", "a1"}));
    enq(e, mk_kernels("full", 2, (const char *const[]){"a3", "a1"}));
    enq(e, mk_kernels("gone", 2, (const char *const[]){"", "nope"}));
    rec r = {0};
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, NULL), 1);
    assert_string_equal(r.scheduled[0], "pk");
    sched_group *g = sched_engine_group(e, "default");
    assert_int_equal(slots_get(&sched_group_agent(g, "a1")->used, SLOT_CPU), 2000);
    assert_int_equal(slots_get(&sched_group_agent(g, "a2")->used, SLOT_CPU), 1000);
    assert_int_equal(slots_get(&sched_group_agent(g, "a3")->used, SLOT_CPU), 0); /* rolled back */
    sched_queue *q = sched_engine_queue(e, "default");
    sched_session *f = sched_queue_find(q, "full"), *n = sched_queue_find(q, "gone");
    assert_string_equal(f->reason_code, "no_capacity");
    assert_non_null(strstr(f->reason, "designated agent a1"));
    assert_string_equal(n->reason_code, "no_agent");
    assert_non_null(strstr(n->reason, "designated agent nope"));
    /* a1 frees: the session goes, both kernels at once */
    assert_true(sched_engine_release(e, "pk-k0"));
    memset(&r, 0, sizeof(r));
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, NULL), 1);
    assert_string_equal(r.scheduled[0], "full");
    assert_string_equal(r.agent[0], "a3");
    assert_int_equal(slots_get(&sched_group_agent(g, "a1")->used, SLOT_CPU), 2000);
    sched_engine_free(e);
}

/* A multi-node session whose kernels each fit somewhere, but not all at
 * once, waits saying so (not that no agent has room for one kernel). */
static void test_multi_node_room_for_some_kernels(void **state)
{
    (void)state;
    sched_engine *e = engine(SCHED_FIFO, SCHED_CONCENTRATED, "cpu=1 mem=16g", 2);
    enq(e, mk("one", &ALICE, "cpu=1", 0));
    enq(e, mk_kernels("two", 2, (const char *const[]){"", ""}));
    rec r = {0};
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, NULL), 1);
    assert_string_equal(r.scheduled[0], "one");
    sched_session *t = sched_queue_find(sched_engine_queue(e, "default"), "two");
    assert_non_null(t);
    assert_string_equal(t->reason_code, "no_capacity");
    assert_string_equal(t->reason, "not enough room in resource group default for the 2 kernels "
                                   "of the session at once (1 fit)");
    sched_group *g = sched_engine_group(e, "default");
    /* the kernel placed before the refusal rolled back: only "one" holds */
    assert_int_equal(slots_get(&sched_group_agent(g, "a1")->used, SLOT_CPU) +
                         slots_get(&sched_group_agent(g, "a2")->used, SLOT_CPU),
                     1000);
    /* room for both: placed */
    assert_true(sched_engine_release(e, "one-k0"));
    memset(&r, 0, sizeof(r));
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, NULL), 1);
    assert_string_equal(r.scheduled[0], "two");
    sched_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_designated_agent),
        cmocka_unit_test(test_drained_agents),
        cmocka_unit_test(test_agent_per_kernel),
        cmocka_unit_test(test_multi_node_room_for_some_kernels),
    };
    return cmocka_run_group_tests_name("sched_pinning", tests, NULL, NULL);
}
