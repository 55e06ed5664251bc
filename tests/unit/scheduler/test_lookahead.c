/* test_lookahead.c: the pass bounded by the resource group's look-ahead
 * (sched_rg_policy.lookahead): a pass considers at most N sessions, says when
 * it left some unseen, and repeated passes drain a longer queue in order;
 * backfill, priorities and drf fairness hold inside the window; the queue's
 * holes (taken sessions) are compacted without losing anyone. */
#include "services/scheduler/engine.h"
#include "tests/unit/scheduler/sched_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

/* An engine as fixture's engine() with the look-ahead n. */
static sched_engine *bounded(sched_order order, const char *agent_slots, int nagents, int n)
{
    sched_engine *e = engine(order, SCHED_CONCENTRATED, agent_slots, nagents);
    sched_rg_policy pol = {.order = order, .selector = SCHED_CONCENTRATED, .lookahead = n};
    sched_engine_set_policy(e, "default", &pol);
    return e;
}

/* Outcomes of either kind, counted. */
typedef struct seen {
    rec r;
    int outcomes;
} seen;

static void count_outcome(void *ctx, const sched_outcome *o)
{
    seen *s = ctx;
    s->outcomes++;
    on_outcome(&s->r, o);
}

static void test_pass_touches_at_most_n(void **state)
{
    (void)state;
    /* 100 sessions that never fit (too big) and 5 that would, behind them */
    sched_engine *e = bounded(SCHED_FIFO, "cpu=4 mem=16g", 2, 10);
    char id[32];
    for (int i = 0; i < 100; i++) {
        snprintf(id, sizeof(id), "big%d", i);
        enq(e, mk(id, &ALICE, "cpu=8", 0));
    }
    for (int i = 0; i < 5; i++) {
        snprintf(id, sizeof(id), "small%d", i);
        enq(e, mk(id, &BOB, "cpu=1", 0));
    }
    seen s = {0};
    sched_pass_stats st;
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, count_outcome, &s, &st), 0);
    assert_int_equal(st.considered, 10);
    assert_int_equal(s.outcomes, 10);
    assert_true(st.stopped);
    assert_string_equal(s.r.last_id, "big9");
    /* the sessions past the window were not looked at */
    sched_queue *q = sched_engine_queue(e, "default");
    assert_int_equal(sched_queue_find(q, "big9")->attempts, 1);
    assert_int_equal(sched_queue_find(q, "big10")->attempts, 0);
    assert_int_equal(sched_queue_find(q, "small0")->attempts, 0);
    assert_string_equal(sched_queue_find(q, "small0")->reason_code, "");
    assert_int_equal(sched_queue_len(q), 105);

    /* 0: the whole queue, as before (backfill reaches the small ones) */
    sched_rg_policy all = {.order = SCHED_FIFO, .selector = SCHED_CONCENTRATED, .lookahead = 0};
    sched_engine_set_policy(e, "default", &all);
    memset(&s, 0, sizeof(s));
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, count_outcome, &s, &st), 5);
    assert_int_equal(st.considered, 105);
    assert_false(st.stopped);
    sched_engine_free(e);
}

static void test_passes_drain_a_longer_queue_in_order(void **state)
{
    (void)state;
    sched_engine *e = bounded(SCHED_FIFO, "cpu=100 mem=100g", 1, 8);
    char id[32];
    for (int i = 0; i < 50; i++) {
        snprintf(id, sizeof(id), "s%02d", i);
        enq(e, mk(id, i % 2 ? &ALICE : &BOB, "cpu=1", 0));
    }
    int next = 0, passes = 0;
    sched_pass_stats st;
    do {
        rec r = {0};
        int n = sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, &st);
        assert_true(n <= 8);
        assert_int_equal(st.considered, n);
        for (int i = 0; i < n; i++) {
            snprintf(id, sizeof(id), "s%02d", next++);
            assert_string_equal(r.scheduled[i], id);
        }
        passes++;
    } while (st.stopped);
    assert_int_equal(next, 50);
    assert_int_equal(passes, 7); /* 6 x 8 (stopped each time), then 2 */
    assert_int_equal(sched_queue_len(sched_engine_queue(e, "default")), 0);
    sched_engine_free(e);
}

static void test_backfill_and_priority_within_the_window(void **state)
{
    (void)state;
    sched_engine *e = bounded(SCHED_FIFO, "cpu=4 mem=16g", 1, 4);
    enq(e, mk("big", &ALICE, "cpu=8", 0)); /* never fits */
    enq(e, mk("small1", &BOB, "cpu=1", 0));
    enq(e, mk("small2", &BOB, "cpu=1", 0));
    enq(e, mk("small3", &BOB, "cpu=1", 0));
    enq(e, mk("small4", &BOB, "cpu=1", 0));
    /* pushed last, but of a higher priority: first, with no re-sort */
    enq(e, mk("urgent", &BOB, "cpu=1", 5));
    rec r = {0};
    sched_pass_stats st;
    /* the window: urgent, big, small1, small2; the small ones backfill past big */
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, &st), 3);
    assert_true(st.stopped);
    assert_string_equal(r.scheduled[0], "urgent");
    assert_string_equal(r.scheduled[1], "small1");
    assert_string_equal(r.scheduled[2], "small2");
    assert_string_equal(r.last_id, "big");
    assert_string_equal(r.last_code, "too_big");
    /* the next pass: big, small3 (room for one cpu left), small4 does not fit */
    memset(&r, 0, sizeof(r));
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, &st), 1);
    assert_string_equal(r.scheduled[0], "small3");
    assert_false(st.stopped);
    assert_int_equal(st.considered, 3);
    sched_engine_free(e);
}

static void test_drf_alternates_within_the_window(void **state)
{
    (void)state;
    sched_engine *e = bounded(SCHED_DRF, "cpu=100 mem=100g", 1, 4);
    char id[32];
    /* alice's 20 sessions are all older than bob's: fifo would take only hers */
    for (int i = 0; i < 20; i++) {
        snprintf(id, sizeof(id), "a%02d", i);
        enq(e, mk(id, &ALICE, "cpu=1", 0));
    }
    for (int i = 0; i < 20; i++) {
        snprintf(id, sizeof(id), "b%02d", i);
        enq(e, mk(id, &BOB, "cpu=1", 0));
    }
    rec r = {0};
    sched_pass_stats st;
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, &st), 4);
    assert_true(st.stopped);
    const char *want[] = {"a00", "b00", "a01", "b01"};
    for (int i = 0; i < 4; i++)
        assert_string_equal(r.scheduled[i], want[i]);
    /* bob's share equals alice's after each pair: they keep alternating */
    memset(&r, 0, sizeof(r));
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, &st), 4);
    const char *want2[] = {"a02", "b02", "a03", "b03"};
    for (int i = 0; i < 4; i++)
        assert_string_equal(r.scheduled[i], want2[i]);
    sched_engine_free(e);
}

static void test_holes_compacted_without_losing_sessions(void **state)
{
    (void)state;
    /* room for all: what is checked is that the cancels leave no one lost */
    sched_engine *e = bounded(SCHED_FIFO, "cpu=1000 mem=1000g", 1, 64);
    char id[32];
    for (int i = 0; i < 300; i++) {
        snprintf(id, sizeof(id), "s%03d", i);
        enq(e, mk(id, i % 3 ? &ALICE : &BOB, "cpu=1", 0));
    }
    /* cancel the first 200 and every tenth after: the band and the user
     * lists are compacted on the way (positions renumbered) */
    for (int i = 0; i < 200; i++) {
        snprintf(id, sizeof(id), "s%03d", i);
        assert_true(sched_engine_cancel(e, "default", id));
    }
    for (int i = 200; i < 300; i += 10) {
        snprintf(id, sizeof(id), "s%03d", i);
        assert_true(sched_engine_cancel(e, "default", id));
        assert_false(sched_engine_cancel(e, "default", id)); /* gone: not found again */
    }
    sched_queue *q = sched_engine_queue(e, "default");
    assert_int_equal(sched_queue_len(q), 90);
    /* every one left is found and placed, in order, 64 then 26 */
    int next = 200, total = 0;
    for (int pass = 0; pass < 2; pass++) {
        rec r = {0};
        int n = sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, NULL);
        for (int i = 0; i < n; i++, next++) {
            if (next % 10 == 0) next++;
            snprintf(id, sizeof(id), "s%03d", next);
            assert_string_equal(r.scheduled[i], id);
        }
        total += n;
    }
    assert_int_equal(total, 90);
    assert_int_equal(sched_queue_len(q), 0);
    /* the queue is usable again after it emptied (its bands were freed) */
    enq(e, mk("again", &BOB, "cpu=1", 3));
    rec r = {0};
    assert_int_equal(sched_engine_pass(e, "default", 0, NULL, on_outcome, &r, NULL), 1);
    assert_string_equal(r.scheduled[0], "again");
    sched_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pass_touches_at_most_n),
        cmocka_unit_test(test_passes_drain_a_longer_queue_in_order),
        cmocka_unit_test(test_backfill_and_priority_within_the_window),
        cmocka_unit_test(test_drf_alternates_within_the_window),
        cmocka_unit_test(test_holes_compacted_without_losing_sessions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
