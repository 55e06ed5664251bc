/* test_kbus_stop.c: kbus_consumers_stop stops the members of one consumer
 * group together. Stopped one by one, each leaving member set off a
 * rebalance that the next close waited out (5 s a member on the mock
 * cluster: tessera-registry, with three members a group, needed SIGKILL at
 * dev-down). Also: what the members handled stays committed (new members
 * of the group get nothing again, twice), NULL entries and n = 0 are harmless,
 * against librdkafka's in-process mock cluster. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "libcommon/kbus.h"
#include "libcommon/common.h"
#include "tessera/v1/audit.pb-c.h"

#include "mock_kafka.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define TOPIC "t.stop"
#define MEMBERS 3

typedef mock_kafka fixture;

static int setup(void **state)
{
    static const char *const none[] = {NULL};
    fixture *f = calloc(1, sizeof(*f));
    mock_kafka_start(f, none);
    assert_int_equal(rd_kafka_mock_topic_create(f->mc, TOPIC, MEMBERS, 1), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    mock_kafka_stop(*state);
    free(*state);
    return 0;
}

static kbus *bus_for(fixture *f)
{
    ts_err err = {{0}};
    kbus_opts o = {.bootstrap = f->bootstrap,
                   .service = "test",
                   .instance = "1",
                   .max_attempts = 1,
                   .fetch_wait_ms = 10};
    kbus *bus = kbus_new(&o, &err);
    assert_non_null(bus);
    return bus;
}

static _Atomic int got;

static kbus_result count_one(const kbus_msg *m, void *ctx, ts_err *why)
{
    (void)m, (void)ctx, (void)why;
    atomic_fetch_add(&got, 1);
    return KBUS_DONE;
}

static int assigned(kbus_consumer *const *cs, int n)
{
    int have = 0;
    for (int i = 0; i < n; i++)
        have += kbus_consumer_partitions(cs[i]);
    return have;
}

/* MEMBERS consumers of one group, each holding a partition, settled. */
static void start_group(kbus *bus, const char *group, kbus_consumer **cs)
{
    static const char *const topics[] = {TOPIC, NULL};
    ts_err err = {{0}};
    for (int i = 0; i < MEMBERS; i++) {
        cs[i] = kbus_consume(bus, group, topics, count_one, NULL, &err);
        assert_non_null(cs[i]);
    }
    /* The mock cluster is slow to settle three members that join at once
     * (this binary, two groups started, took 16 to 37 s in eight runs on an
     * idle machine), and 20 s was once too short under make test. 90 s
     * bounds a hang; it is not a speed. */
    for (int i = 0; i < 1800 && assigned(cs, MEMBERS) < MEMBERS; i++)
        usleep(50 * 1000);
    assert_int_equal(assigned(cs, MEMBERS), MEMBERS);
}

static void publish(kbus *bus, int n)
{
    ts_err err = {{0}};
    Tessera__V1__ApiAccess a = TESSERA__V1__API_ACCESS__INIT;
    a.method = "GET";
    a.path = "/x";
    for (int i = 0; i < n; i++) {
        char key[16];
        snprintf(key, sizeof(key), "k%d", i);
        assert_true(kbus_publish(bus, TOPIC, key, &a.base, NULL, NULL, &err));
    }
    assert_true(kbus_flush(bus, 5000));
}

static void test_a_group_stops_together_and_keeps_its_offsets(void **state)
{
    kbus *bus = bus_for(*state);
    kbus_consumer *cs[MEMBERS];
    start_group(bus, "g.stop", cs);
    atomic_store(&got, 0);
    publish(bus, 30);
    for (int i = 0; i < 300 && atomic_load(&got) < 30; i++)
        usleep(20 * 1000);
    assert_int_equal(atomic_load(&got), 30);

    int64_t t0 = ts_now_mono_ms();
    kbus_consumers_stop(cs, MEMBERS);
    int64_t took = ts_now_mono_ms() - t0;
    /* Not a speed target: one by one this took MEMBERS - 1 rebalances of
     * about 5 s; together it is one round of LeaveGroup. */
    fprintf(stderr, "kbus_consumers_stop of %d members: %lld ms\n", MEMBERS, (long long)took);
    assert_true(took < 3000);

    /* the offsets were committed: a new member starts after the 30 */
    kbus_consumer *again[MEMBERS];
    start_group(bus, "g.stop", again);
    publish(bus, 3);
    for (int i = 0; i < 300 && atomic_load(&got) < 33; i++)
        usleep(20 * 1000);
    usleep(300 * 1000); /* anything replayed would arrive by now too */
    assert_int_equal(atomic_load(&got), 33);
    /* a group that took messages since it started commits them at the stop
     * too, though its members leave together */
    kbus_consumers_stop(again, MEMBERS);
    kbus_consumer *third[MEMBERS];
    start_group(bus, "g.stop", third);
    usleep(500 * 1000);
    assert_int_equal(atomic_load(&got), 33);
    kbus_consumers_stop(third, MEMBERS);
    kbus_close(bus, 1000);
}

static void test_null_entries_and_nothing_are_harmless(void **state)
{
    kbus *bus = bus_for(*state);
    static const char *const topics[] = {TOPIC, NULL};
    ts_err err = {{0}};
    kbus_consumer *cs[3] = {NULL, kbus_consume(bus, "g.one", topics, count_one, NULL, &err), NULL};
    assert_non_null(cs[1]);
    kbus_consumers_stop(cs, 3);
    kbus_consumers_stop(cs, 0);
    kbus_consumers_stop(NULL, 0);
    kbus_consumer_stop(NULL);
    kbus_close(bus, 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_group_stops_together_and_keeps_its_offsets, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_null_entries_and_nothing_are_harmless, setup,
                                        teardown),
    };
    return cmocka_run_group_tests_name("kbus_stop", tests, NULL, NULL);
}
