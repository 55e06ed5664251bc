/* test_placement.c: the scheduler's in-memory engine: per-device GPU
 * placement, selectors, fragmentation reasons, queue order (fifo, lifo, drf,
 * priorities), each predicate, backfill and aging. */
#include "services/scheduler/engine.h"
#include "tests/unit/scheduler/sched_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers --------------------------------------------------------------------------------- */

/* Place and commit; returns the pick (fails the test if it does not fit). */
static sched_pick place(sched_group *g, const char *req)
{
    slots_t r = S(req);
    sched_pick p;
    if (!sched_group_place(g, &r, "", "s", NULL, &p)) fail_msg("'%s' did not fit", req);
    sched_group_commit(g, &p, &r);
    return p;
}

static bool fits(sched_group *g, const char *req)
{
    slots_t r = S(req);
    sched_pick p;
    return sched_group_place(g, &r, "", "s", NULL, &p);
}

/* ---- placement --------------------------------------------------------------------------------
 */

static void test_four_quarters_fill_one_device(void **state)
{
    (void)state;
    sched_group *g = sched_group_new("gpu", SCHED_CONCENTRATED);
    sched_agent *a = add_agent(g, "a1", "cpu=32 mem=128g", 2);
    assert_int_equal(slots_get(&a->total, SLOT_CUDA_SHARES), 200);
    assert_int_equal(slots_get(&a->total, SLOT_CUDA_DEVICE), 2);
    for (int i = 0; i < 4; i++) {
        sched_pick p = place(g, "cpu=1 mem=1g cuda.shares=0.25");
        assert_ptr_equal(p.agent, a);
        assert_int_equal(p.ndev, 1);
        assert_int_equal(p.dev[0].dev, 0);
        assert_int_equal(p.dev[0].shares, 25);
    }
    assert_int_equal(a->dev_used[0], 100);
    assert_int_equal(a->dev_used[1], 0);
    assert_int_equal(slots_get(&a->used, SLOT_CUDA_SHARES), 100);
    sched_pick p = place(g, "cuda.shares=0.25");
    assert_int_equal(p.dev[0].dev, 1);
    sched_group_free(g);
}

static void test_two_sixty_use_two_devices_and_fragmentation(void **state)
{
    (void)state;
    sched_group *g = sched_group_new("gpu", SCHED_CONCENTRATED);
    sched_agent *a = add_agent(g, "a1", "cpu=32 mem=128g", 2);
    sched_pick p1 = place(g, "cuda.shares=0.6");
    sched_pick p2 = place(g, "cuda.shares=0.6");
    assert_int_equal(p1.ndev, 1);
    assert_int_equal(p2.ndev, 1);
    assert_int_not_equal(p1.dev[0].dev, p2.dev[0].dev);
    assert_int_equal(a->dev_used[0], 60);
    assert_int_equal(a->dev_used[1], 60);

    /* 0.8 free in total, 0.4 on the best device: a 0.5 does not fit, fragmented */
    assert_false(fits(g, "cuda.shares=0.5"));
    slots_t r = S("cuda.shares=0.5");
    char why[SCHED_REASON_MAX];
    assert_int_equal(sched_group_explain(g, &r, "", "s", why, sizeof(why)), SCHED_FIT_FRAGMENTED);
    assert_non_null(strstr(why, "not enough cuda.shares in resource group gpu"));
    assert_non_null(strstr(why, "fragmented: 0.40 free on the best device"));
    assert_string_equal(sched_fit_code(SCHED_FIT_FRAGMENTED), "fragmented");
    /* 0.9 is more than is free at all: plainly not enough */
    r = S("cuda.shares=0.9");
    assert_int_equal(sched_group_explain(g, &r, "", "s", why, sizeof(why)), SCHED_FIT_SHORT);
    assert_non_null(strstr(why, "0.90 requested, 0.80 free in total"));
    /* 0.4 still fits, on either device */
    assert_true(fits(g, "cuda.shares=0.4"));
    sched_group_free(g);
}

static void test_best_fit_device(void **state)
{
    (void)state;
    sched_group *g = sched_group_new("gpu", SCHED_CONCENTRATED);
    sched_agent *a = add_agent(g, "a1", "cpu=32 mem=128g", 3);
    place(g, "cuda.shares=0.5"); /* dev 0 */
    place(g, "cuda.shares=0.7"); /* dev 1 (dev 0 has only 0.5) */
    assert_int_equal(a->dev_used[0], 50);
    assert_int_equal(a->dev_used[1], 70);
    sched_pick p = place(g, "cuda.shares=0.3"); /* tightest: dev 1 (0.3 free) */
    assert_int_equal(p.dev[0].dev, 1);
    p = place(g, "cuda.shares=0.4"); /* dev 0 (0.5 free), not the empty dev 2 */
    assert_int_equal(p.dev[0].dev, 0);
    assert_int_equal(a->dev_used[2], 0);
    sched_group_free(g);
}

static void test_whole_devices_and_large_shares(void **state)
{
    (void)state;
    sched_group *g = sched_group_new("gpu", SCHED_CONCENTRATED);
    sched_agent *a = add_agent(g, "a1", "cpu=32 mem=128g", 4);
    place(g, "cuda.shares=0.1"); /* dev 0 partly used */
    sched_pick p = place(g, "cuda.device=2");
    assert_int_equal(p.ndev, 2);
    assert_true(p.dev[0].whole && p.dev[1].whole);
    assert_int_equal(p.dev[0].dev, 1);
    assert_int_equal(p.dev[1].dev, 2);
    assert_int_equal(a->dev_used[1], 100);
    assert_int_equal(slots_get(&a->used, SLOT_CUDA_DEVICE), 2);
    /* only dev 3 is entirely free now */
    assert_false(fits(g, "cuda.device=2"));
    slots_t r = S("cuda.device=2");
    char why[SCHED_REASON_MAX];
    sched_group_explain(g, &r, "", "s", why, sizeof(why));
    assert_non_null(strstr(why, "not enough cuda.device"));
    /* a whole device cannot share with a fractional user */
    assert_true(fits(g, "cuda.device=1"));
    sched_pick w = place(g, "cuda.device=1");
    assert_int_equal(w.dev[0].dev, 3);
    assert_false(fits(g, "cuda.device=1"));

    /* 2.5 shares on a fresh agent: two whole devices + 0.5 on a third */
    sched_group *g2 = sched_group_new("gpu2", SCHED_CONCENTRATED);
    sched_agent *b = add_agent(g2, "b1", "cpu=32 mem=128g", 4);
    p = place(g2, "cuda.shares=2.5");
    assert_int_equal(p.ndev, 3);
    assert_int_equal(p.dev[0].shares + p.dev[1].shares + p.dev[2].shares, 250);
    int whole = 0;
    for (int i = 0; i < 3; i++)
        whole += p.dev[i].shares == 100;
    assert_int_equal(whole, 2);
    /* the 0.5 remainder: the next 0.5 goes best fit on the same device */
    p = place(g2, "cuda.shares=0.5");
    assert_int_equal(b->dev_used[p.dev[0].dev], 100);
    /* one device left entirely free: 1.5 needs one whole + 0.5 elsewhere: none */
    assert_false(fits(g2, "cuda.shares=1.5"));
    assert_true(fits(g2, "cuda.shares=1"));
    sched_group_free(g2);
    sched_group_free(g);
}

static void test_selectors(void **state)
{
    (void)state;
    sched_group *g = sched_group_new("cpu", SCHED_CONCENTRATED);
    sched_agent *a1 = add_agent(g, "a1", "cpu=4 mem=16g", 0);
    sched_agent *a2 = add_agent(g, "a2", "cpu=4 mem=16g", 0);
    sched_agent *a3 = add_agent(g, "a3", "cpu=4 mem=16g", 0);
    sched_pick p;
    slots_t three = S("cpu=3"), one = S("cpu=1");
    p.agent = a1;
    p.ndev = 0;
    sched_group_commit(g, &p, &three);
    p.agent = a2;
    sched_group_commit(g, &p, &one);
    slots_t req = S("cpu=1 mem=1g");
    assert_true(sched_group_place(g, &req, "", "s", NULL, &p));
    assert_ptr_equal(p.agent, a1); /* fullest that fits */
    sched_group_set_selector(g, SCHED_DISPERSED);
    assert_true(sched_group_place(g, &req, "", "s", NULL, &p));
    assert_ptr_equal(p.agent, a3); /* emptiest */
    req = S("cpu=2");
    sched_group_set_selector(g, SCHED_CONCENTRATED);
    assert_true(sched_group_place(g, &req, "", "s", NULL, &p));
    assert_ptr_equal(p.agent, a2); /* a1 has only 1 free */
    sched_group_set_selector(g, SCHED_ROUNDROBIN);
    req = S("cpu=0.5");
    sched_agent *seen[4];
    for (int i = 0; i < 4; i++) {
        assert_true(sched_group_place(g, &req, "", "s", NULL, &p));
        seen[i] = p.agent;
    }
    assert_ptr_not_equal(seen[0], seen[1]);
    assert_ptr_not_equal(seen[1], seen[2]);
    assert_ptr_not_equal(seen[0], seen[2]);
    assert_ptr_equal(seen[3], seen[0]);

    /* GPUs: concentrated takes the agent whose best device is the tightest fit */
    sched_group *gg = sched_group_new("gpu", SCHED_CONCENTRATED);
    sched_agent *b1 = add_agent(gg, "b1", "cpu=8 mem=32g", 1);
    sched_agent *b2 = add_agent(gg, "b2", "cpu=8 mem=32g", 1);
    sched_agent *b3 = add_agent(gg, "b3", "cpu=8 mem=32g", 2);
    slots_t s70 = S("cuda.shares=0.7"), s50 = S("cuda.shares=0.5");
    assert_true(sched_group_place(gg, &s70, "", "s", b1, &p));
    sched_group_commit(gg, &p, &s70); /* b1: 0.3 free */
    assert_true(sched_group_place(gg, &s50, "", "s", b2, &p));
    sched_group_commit(gg, &p, &s50); /* b2: 0.5 free */
    req = S("cuda.shares=0.3");
    assert_true(sched_group_place(gg, &req, "", "s", NULL, &p));
    assert_ptr_equal(p.agent, b1);
    req = S("cuda.shares=0.4");
    assert_true(sched_group_place(gg, &req, "", "s", NULL, &p));
    assert_ptr_equal(p.agent, b2);
    sched_group_set_selector(gg, SCHED_DISPERSED);
    assert_true(sched_group_place(gg, &req, "", "s", NULL, &p));
    assert_ptr_equal(p.agent, b3); /* two entirely free devices */
    /* an agent that is not schedulable is never chosen */
    sched_group_set_schedulable(gg, b3, false);
    assert_true(sched_group_place(gg, &req, "", "s", NULL, &p));
    assert_ptr_equal(p.agent, b2);
    req = S("cuda.shares=0.6");
    assert_false(sched_group_place(gg, &req, "", "s", NULL, &p));
    sched_group_free(gg);
    sched_group_free(g);
}

static void test_arch_too_big_and_capacity_updates(void **state)
{
    (void)state;
    sched_group *g = sched_group_new("default", SCHED_CONCENTRATED);
    sched_agent *a = add_agent(g, "a1", "cpu=4 mem=16g", 1);
    char why[SCHED_REASON_MAX];
    slots_t r = S("cpu=1");
    sched_pick p;
    assert_false(sched_group_place(g, &r, "aarch64", "s", NULL, &p));
    assert_int_equal(sched_group_explain(g, &r, "aarch64", "s", why, sizeof(why)),
                     SCHED_FIT_NO_AGENT);
    assert_non_null(strstr(why, "no schedulable agent for architecture aarch64"));
    assert_true(sched_group_place(g, &r, "x86_64", "s", NULL, &p));
    r = S("cpu=64");
    assert_int_equal(sched_group_explain(g, &r, "", "s", why, sizeof(why)), SCHED_FIT_TOO_BIG);
    assert_non_null(strstr(why, "requested cpu 64 is more than any agent in resource group "
                                "default has (at most 4)"));
    r = S("cpu=3");
    sched_group_commit(g, &(sched_pick){.agent = a}, &r);
    r = S("cpu=2");
    assert_int_equal(sched_group_explain(g, &r, "", "s", why, sizeof(why)), SCHED_FIT_SHORT);
    assert_non_null(strstr(why, "not enough cpu in resource group default (2 requested, at most "
                                "1 free on one agent)"));
    /* capacity update keeps occupancy; cannot go below it */
    ts_err err = {{0}};
    sched_agent_spec spec = {
        .id = "a1", .total = S("cpu=8 mem=16g"), .ndev = 1, .schedulable = true};
    assert_true(sched_group_set_agent(g, &spec, &err));
    assert_int_equal(slots_get(&a->used, SLOT_CPU), 3000);
    assert_true(fits(g, "cpu=5"));
    spec.total = S("cpu=2 mem=16g");
    assert_false(sched_group_set_agent(g, &spec, &err));
    assert_non_null(strstr(err.msg, "occupied cpu is above the new capacity"));
    slots_t five = S("cpu=5");
    assert_false(sched_group_uncommit(g, a, &five, NULL, 0, &err)); /* holds only 3 */
    assert_non_null(strstr(err.msg, "cpu: cannot take 5 from 3"));
    slots_t three = S("cpu=3");
    assert_true(sched_group_uncommit(g, a, &three, NULL, 0, &err));
    assert_true(slots_is_zero(&a->used));
    assert_true(sched_group_remove_agent(g, "a1"));
    assert_false(sched_group_remove_agent(g, "a1"));
    assert_int_equal(sched_group_agent_count(g), 0);
    sched_group_free(g);
}

/* ---- engine: order, predicates, backfill, aging ------------------------------------------ */

static void test_fifo_lifo_priorities(void **state)
{
    (void)state;
    for (int lifo = 0; lifo < 2; lifo++) {
        sched_engine *e =
            engine(lifo ? SCHED_LIFO : SCHED_FIFO, SCHED_CONCENTRATED, "cpu=100 mem=100g", 1);
        enq(e, mk("s1", &ALICE, "cpu=1", 0));
        enq(e, mk("s2", &ALICE, "cpu=1", 0));
        enq(e, mk("s3", &BOB, "cpu=1", 0));
        enq(e, mk("hi1", &BOB, "cpu=1", 10));
        enq(e, mk("mid", &BOB, "cpu=1", 5));
        enq(e, mk("hi2", &BOB, "cpu=1", 10));
        rec r = {0};
        assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, NULL), 6);
        const char *want_fifo[] = {"hi1", "hi2", "mid", "s1", "s2", "s3"};
        const char *want_lifo[] = {"hi2", "hi1", "mid", "s3", "s2", "s1"};
        for (int i = 0; i < 6; i++)
            assert_string_equal(r.scheduled[i], lifo ? want_lifo[i] : want_fifo[i]);
        assert_int_equal(sched_queue_len(sched_engine_queue(e, "default")), 0);
        assert_int_equal(sched_engine_alloc_count(e), 6);
        sched_engine_free(e);
    }
}

static void test_drf(void **state)
{
    (void)state;
    sched_engine *e = engine(SCHED_DRF, SCHED_CONCENTRATED, "cpu=100 mem=100g", 1);
    /* equal (zero) usage: the users alternate, ties to the older session */
    enq(e, mk("a1", &ALICE, "cpu=10", 0));
    enq(e, mk("a2", &ALICE, "cpu=10", 0));
    enq(e, mk("a3", &ALICE, "cpu=10", 0));
    enq(e, mk("b1", &BOB, "cpu=10", 0));
    enq(e, mk("b2", &BOB, "cpu=10", 0));
    rec r = {0};
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, NULL), 5);
    const char *want[] = {"a1", "b1", "a2", "b2", "a3"};
    for (int i = 0; i < 5; i++)
        assert_string_equal(r.scheduled[i], want[i]);
    /* alice now holds 30% of cpu, bob 20%: bob's sessions go first */
    enq(e, mk("a4", &ALICE, "cpu=5", 0));
    enq(e, mk("b3", &BOB, "cpu=5", 0));
    enq(e, mk("b4", &BOB, "cpu=5", 0));
    enq(e, mk("b5", &BOB, "mem=40g", 0)); /* dominant share by memory: 0.2 + 0.4 */
    enq(e, mk("a5", &ALICE, "cpu=5", 0));
    memset(&r, 0, sizeof(r));
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, NULL), 5);
    const char *want2[] = {"b3", "b4", "a4", "b5", "a5"};
    for (int i = 0; i < 5; i++)
        assert_string_equal(r.scheduled[i], want2[i]);
    /* priority bands still come first */
    enq(e, mk("a6", &ALICE, "cpu=1", 1));
    enq(e, mk("b6", &BOB, "cpu=1", 0));
    memset(&r, 0, sizeof(r));
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, NULL), 2);
    assert_string_equal(r.scheduled[0], "a6");
    sched_engine_free(e);
}

static void test_predicate_keypair_concurrency(void **state)
{
    (void)state;
    sched_engine *e = engine(SCHED_FIFO, SCHED_CONCENTRATED, "cpu=100 mem=100g", 1);
    sched_limits lim = {.max_concurrent_sessions = 3};
    sched_accounts_set_limits(sched_engine_accounts(e), SCHED_SCOPE_KEYPAIR, ALICE.ak, &lim);
    for (int i = 0; i < 4; i++) {
        char id[8];
        snprintf(id, sizeof(id), "s%d", i);
        enq(e, mk(id, &ALICE, "cpu=1", 0));
    }
    enq(e, mk("bob1", &BOB, "cpu=1", 0));
    rec r = {0};
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, NULL), 4);
    assert_string_equal(r.last_id, "s3");
    assert_string_equal(r.last_code, "keypair_concurrency");
    assert_string_equal(r.last_reason, "keypair concurrency limit 3 reached");
    assert_string_equal(r.scheduled[3], "bob1"); /* others are not held back */
    /* a session ends: the next pass schedules it; a second release changes nothing */
    assert_true(sched_engine_release(e, "s0-k0"));
    assert_false(sched_engine_release(e, "s0-k0"));
    memset(&r, 0, sizeof(r));
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, NULL), 1);
    assert_string_equal(r.scheduled[0], "s3");
    sched_engine_free(e);
}

static void test_predicate_slot_limits(void **state)
{
    (void)state;
    static const struct {
        sched_scope scope;
        const char *id, *code, *reason;
    } cases[] = {
        {SCHED_SCOPE_KEYPAIR, "AKALICE", "keypair_slots",
         "keypair total slot limit: cpu 3 in use + 3 requested > 4"},
        {SCHED_SCOPE_USER, "alice", "user_slots",
         "user total slot limit: cpu 3 in use + 3 requested > 4"},
        {SCHED_SCOPE_PROJECT, "p1", "project_slots",
         "project total slot limit: cpu 3 in use + 3 requested > 4"},
        {SCHED_SCOPE_DOMAIN, "default", "domain_slots",
         "domain total slot limit: cpu 3 in use + 3 requested > 4"},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(cases); i++) {
        sched_engine *e = engine(SCHED_FIFO, SCHED_CONCENTRATED, "cpu=100 mem=100g", 1);
        sched_limits lim = {0};
        lim.max_slots = S("cpu=4");
        sched_accounts_set_limits(sched_engine_accounts(e), cases[i].scope, cases[i].id, &lim);
        enq(e, mk("s1", &ALICE, "cpu=3 mem=1g", 0));
        enq(e, mk("s2", &ALICE, "cpu=3 mem=1g", 0));
        enq(e, mk("s3", &ALICE, "cpu=1 mem=50g", 0)); /* within the limit: backfilled */
        rec r = {0};
        assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, NULL), 2);
        assert_string_equal(r.scheduled[1], "s3");
        assert_string_equal(r.last_id, "s2");
        assert_string_equal(r.last_code, cases[i].code);
        assert_string_equal(r.last_reason, cases[i].reason);
        sched_account *acc =
            sched_accounts_get(sched_engine_accounts(e), cases[i].scope, cases[i].id);
        assert_int_equal(slots_get(&acc->used, SLOT_CPU), 4000);
        assert_int_equal(acc->sessions, 2);
        sched_engine_free(e);
    }
}

static void test_predicate_max_pending_and_starts_at(void **state)
{
    (void)state;
    sched_engine *e = engine(SCHED_FIFO, SCHED_CONCENTRATED, "cpu=100 mem=100g", 1);
    sched_limits lim = {.max_pending_sessions = 2};
    sched_accounts_set_limits(sched_engine_accounts(e), SCHED_SCOPE_KEYPAIR, ALICE.ak, &lim);
    enq(e, mk("p1", &ALICE, "cpu=1", 0));
    sched_session *later = mk("p2", &ALICE, "cpu=1", 0);
    later->starts_at_ms = 1767225600000LL; /* 2026-01-01T00:00:00Z */
    enq(e, later);
    sched_session *third = mk("p3", &ALICE, "cpu=1", 0);
    sched_verdict v;
    assert_false(sched_engine_enqueue(e, "default", third, &v));
    assert_string_equal(v.code, "max_pending");
    assert_string_equal(v.reason, "keypair pending session limit 2 reached");
    sched_session *dup = mk("p1", &BOB, "cpu=1", 0);
    assert_false(sched_engine_enqueue(e, "default", dup, &v));
    assert_string_equal(v.code, "duplicate");
    sched_session_free(dup);
    assert_false(sched_engine_enqueue(e, "nope", third, &v));
    assert_string_equal(v.code, "unknown_group");

    rec r = {0};
    int64_t now = 1767225600000LL - 60000;
    assert_int_equal(sched_engine_pass(e, "default", now, NULL, on_outcome, &r, NULL), 1);
    assert_string_equal(r.last_code, "starts_at");
    assert_string_equal(r.last_reason, "starts at 2026-01-01T00:00:00Z (in 60 s)");
    /* p1 left the queue: one pending, so a new one is accepted */
    assert_true(sched_engine_enqueue(e, "default", third, &v));
    memset(&r, 0, sizeof(r));
    assert_int_equal(sched_engine_pass(e, "default", now + 60000, NULL, on_outcome, &r, NULL), 2);
    assert_string_equal(r.scheduled[0], "p2");
    /* cancel */
    enq(e, mk("p4", &ALICE, "cpu=1", 0));
    assert_true(sched_engine_cancel(e, "default", "p4"));
    assert_false(sched_engine_cancel(e, "default", "p4"));
    sched_engine_free(e);
}

static void test_backfill_and_aging(void **state)
{
    (void)state;
    sched_engine *e = engine(SCHED_FIFO, SCHED_DISPERSED, "cpu=8 mem=32g", 2);
    sched_rg_policy pol = {
        .order = SCHED_FIFO, .selector = SCHED_DISPERSED, .aging_ms = 1000, .max_held = 1};
    /* running: 4 cpu on each agent */
    enq(e, mk("x1", &BOB, "cpu=4", 0));
    enq(e, mk("x2", &BOB, "cpu=4", 0));
    rec r = {0};
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, NULL), 2);
    assert_string_not_equal(r.agent[0], r.agent[1]);
    char x1_agent[SCHED_ID_MAX];
    ts_strlcpy(x1_agent, r.agent[0], sizeof(x1_agent));
    pol.selector = SCHED_CONCENTRATED;
    sched_engine_set_policy(e, "default", &pol);

    /* backfill: the big one does not fit, the small one behind it goes */
    enq(e, mk("big", &ALICE, "cpu=6", 0));
    enq(e, mk("small1", &BOB, "cpu=2", 0));
    memset(&r, 0, sizeof(r));
    sched_pass_stats st;
    assert_int_equal(sched_engine_pass(e, "default", 10, NULL, on_outcome, &r, &st), 1);
    assert_string_equal(r.scheduled[0], "small1");
    sched_session *big = sched_queue_find(sched_engine_queue(e, "default"), "big");
    assert_non_null(big);
    assert_string_equal(big->reason_code, "no_capacity");
    assert_string_equal(big->reason, "not enough cpu in resource group default (6 requested, at "
                                     "most 4 free on one agent)");
    assert_int_equal(big->first_skipped_ms, 10);
    const char *small_agent = strcmp(r.agent[0], "a1") == 0 ? "a1" : "a2";
    const char *other = strcmp(small_agent, "a1") == 0 ? "a2" : "a1";

    /* not aged yet (999 ms): nothing held */
    assert_int_equal(sched_engine_pass(e, "default", 1009, NULL, on_outcome, &r, &st), 0);
    assert_int_equal(st.held, 0);
    assert_string_equal(big->held_agent, "");
    /* aged: it holds the agent closest to fitting it (4 free, not 2) */
    assert_int_equal(sched_engine_pass(e, "default", 1010, NULL, on_outcome, &r, &st), 0);
    assert_int_equal(st.held, 1);
    assert_string_equal(big->held_agent, other);
    sched_group *g = sched_engine_group(e, "default");
    assert_string_equal(sched_group_agent(g, other)->reserved_for, "big");

    /* smaller sessions no longer use the held agent */
    enq(e, mk("small2", &BOB, "cpu=2", 0));
    enq(e, mk("small3", &BOB, "cpu=2", 0));
    memset(&r, 0, sizeof(r));
    assert_int_equal(sched_engine_pass(e, "default", 2000, NULL, on_outcome, &r, &st), 1);
    assert_string_equal(r.scheduled[0], "small2");
    assert_string_equal(r.agent[0], small_agent);
    sched_session *s3 = sched_queue_find(sched_engine_queue(e, "default"), "small3");
    assert_string_equal(s3->reason_code, "held_for_aged_session");

    /* the running session on the held agent ends: big goes there */
    const char *xk = strcmp(other, x1_agent) == 0 ? "x1-k0" : "x2-k0";
    assert_true(sched_engine_release(e, xk));
    memset(&r, 0, sizeof(r));
    assert_int_equal(sched_engine_pass(e, "default", 3000, NULL, on_outcome, &r, &st), 2);
    assert_string_equal(r.scheduled[0], "big");
    assert_string_equal(r.agent[0], other);
    assert_string_equal(sched_group_agent(g, other)->reserved_for, "");
    assert_int_equal(sched_group_held_count(g), 0);
    /* and small3 behind it fits there too (2 free after big) */
    assert_string_equal(r.scheduled[1], "small3");
    assert_string_equal(r.agent[1], other);
    sched_engine_free(e);
}

static void test_multi_kernel_all_or_nothing(void **state)
{
    (void)state;
    sched_engine *e = engine(SCHED_FIFO, SCHED_CONCENTRATED, "cpu=4 mem=16g", 2);
    /* multi-node: three kernels of 3 cpu on two 4-cpu agents cannot all go */
    sched_session *s = sched_session_new("mk", 3);
    ts_strlcpy(s->access_key, "AK", sizeof(s->access_key));
    ts_strlcpy(s->user_id, "u", sizeof(s->user_id));
    s->multi_node = true;
    for (int i = 0; i < 3; i++) {
        snprintf(s->kernels[i].kernel_id, SCHED_ID_MAX, "mk-k%d", i);
        s->kernels[i].slots = S("cpu=3");
    }
    ts_err err = {{0}};
    assert_true(sched_session_finish(s, &err));
    enq(e, s);
    rec r = {0};
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, NULL), 0);
    sched_group *g = sched_engine_group(e, "default");
    for (size_t i = 0; i < sched_group_agent_count(g); i++)
        assert_true(slots_is_zero(&sched_group_agent_at(g, i)->used)); /* nothing left behind */
    assert_int_equal(sched_engine_alloc_count(e), 0);
    /* two kernels single-node on one agent: 2 + 2 fits on one 4-cpu agent */
    sched_session *t = sched_session_new("sn", 2);
    ts_strlcpy(t->user_id, "u", sizeof(t->user_id));
    for (int i = 0; i < 2; i++) {
        snprintf(t->kernels[i].kernel_id, SCHED_ID_MAX, "sn-k%d", i);
        t->kernels[i].slots = S("cpu=2");
    }
    assert_true(sched_session_finish(t, &err));
    enq(e, t);
    memset(&r, 0, sizeof(r));
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, NULL), 1);
    assert_int_equal(sched_engine_alloc_count(e), 2);
    sched_agent *a1 = sched_group_agent(g, "a1"), *a2 = sched_group_agent(g, "a2");
    assert_true(slots_get(&a1->used, SLOT_CPU) == 4000 || slots_get(&a2->used, SLOT_CPU) == 4000);
    /* releasing both kernels ends the session in the accounts */
    assert_int_equal(sched_accounts_get(sched_engine_accounts(e), SCHED_SCOPE_USER, "u")->sessions,
                     1);
    assert_true(sched_engine_release(e, "sn-k0"));
    assert_int_equal(sched_accounts_get(sched_engine_accounts(e), SCHED_SCOPE_USER, "u")->sessions,
                     1);
    assert_true(sched_engine_release(e, "sn-k1"));
    assert_int_equal(sched_accounts_get(sched_engine_accounts(e), SCHED_SCOPE_USER, "u")->sessions,
                     0);
    sched_engine_free(e);
}

static bool refuse_odd(void *ctx, const char *group, const sched_session *s, const sched_kplace *k,
                       int nk, ts_err *err)
{
    (void)group, (void)k, (void)nk;
    int *calls = ctx;
    if ((*calls)++ % 2 == 0) return true;
    ts_err_set(err, "agent %s has not enough cpu", s->id);
    return false;
}

static void test_reserve_hook_refusal_rolls_back(void **state)
{
    (void)state;
    sched_engine *e = engine(SCHED_FIFO, SCHED_CONCENTRATED, "cpu=4 mem=16g", 1);
    enq(e, mk("r1", &ALICE, "cpu=1", 0));
    enq(e, mk("r2", &ALICE, "cpu=1", 0));
    int calls = 0;
    sched_pass_stats st;
    assert_int_equal(sched_engine_pass(e, "default", 0, refuse_odd, NULL, &calls, &st), 1);
    assert_int_equal(st.refused, 1);
    sched_agent *a = sched_group_agent(sched_engine_group(e, "default"), "a1");
    assert_int_equal(slots_get(&a->used, SLOT_CPU), 1000);
    sched_session *r2 = sched_queue_find(sched_engine_queue(e, "default"), "r2");
    assert_string_equal(r2->reason_code, "reservation_refused");
    sched_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_four_quarters_fill_one_device),
        cmocka_unit_test(test_two_sixty_use_two_devices_and_fragmentation),
        cmocka_unit_test(test_best_fit_device),
        cmocka_unit_test(test_whole_devices_and_large_shares),
        cmocka_unit_test(test_selectors),
        cmocka_unit_test(test_arch_too_big_and_capacity_updates),
        cmocka_unit_test(test_fifo_lifo_priorities),
        cmocka_unit_test(test_drf),
        cmocka_unit_test(test_predicate_keypair_concurrency),
        cmocka_unit_test(test_predicate_slot_limits),
        cmocka_unit_test(test_predicate_max_pending_and_starts_at),
        cmocka_unit_test(test_backfill_and_aging),
        cmocka_unit_test(test_multi_kernel_all_or_nothing),
        cmocka_unit_test(test_reserve_hook_refusal_rolls_back),
    };
    return cmocka_run_group_tests_name("sched_placement", tests, NULL, NULL);
}
