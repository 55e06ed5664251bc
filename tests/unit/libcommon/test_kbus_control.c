/* test_kbus_control.c: consumers on the control path (kbus_consume_control,
 * kbus_batch_opts.control) fetch with kafka.control_fetch_wait, every other
 * consumer with kafka.fetch_wait, and a control wait of 0 falls back to
 * fetch_wait. Read back from each consumer's librdkafka configuration, and
 * a control consumer still gets what is produced, against librdkafka's
 * in-process mock cluster. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "libcommon/kbus.h"
#include "libcommon/kbus_core.h"
#include "tessera/v1/audit.pb-c.h"

#include "mock_kafka.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef mock_kafka fixture;

static int setup(void **state)
{
    static const char *const topics[] = {"t.control", NULL};
    fixture *f = calloc(1, sizeof(*f));
    mock_kafka_start(f, topics);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    mock_kafka_stop(*state);
    free(*state);
    return 0;
}

static kbus *bus_with(fixture *f, int fetch_wait, int control_wait)
{
    ts_err err = {{0}};
    kbus_opts o = {.bootstrap = f->bootstrap,
                   .service = "test",
                   .instance = "1",
                   .max_attempts = 1,
                   .fetch_wait_ms = fetch_wait,
                   .control_fetch_wait_ms = control_wait};
    kbus *bus = kbus_new(&o, &err);
    assert_non_null(bus);
    return bus;
}

/* The consumer's fetch.wait.max.ms as librdkafka holds it. */
static int fetch_wait_of(kbus_consumer *c)
{
    char v[32];
    size_t n = sizeof(v);
    assert_int_equal(rd_kafka_conf_get(rd_kafka_conf(c->rk), "fetch.wait.max.ms", v, &n),
                     RD_KAFKA_CONF_OK);
    return atoi(v);
}

static _Atomic int got;

static kbus_result count_one(const kbus_msg *m, void *ctx, ts_err *why)
{
    (void)m, (void)ctx, (void)why;
    atomic_fetch_add(&got, 1);
    return KBUS_DONE;
}

static kbus_result count_batch(const kbus_msg *m, size_t n, void *ctx, ts_err *why)
{
    (void)m, (void)ctx, (void)why;
    atomic_fetch_add(&got, (int)n);
    return KBUS_DONE;
}

static void test_control_consumers_take_their_wait(void **state)
{
    fixture *f = *state;
    kbus *bus = bus_with(f, 500, 7);
    static const char *const topics[] = {"t.control", NULL};
    ts_err err = {{0}};
    kbus_consumer *plain = kbus_consume(bus, "g.plain", topics, count_one, NULL, &err);
    kbus_consumer *ctl = kbus_consume_control(bus, "g.ctl", topics, count_one, NULL, &err);
    kbus_batch_opts bo = {.max_messages = 8, .max_wait_ms = 0, .control = true};
    kbus_consumer *bctl = kbus_consume_batch(bus, "g.bctl", topics, &bo, count_batch, NULL, &err);
    kbus_batch_opts bp = {.max_messages = 8, .max_wait_ms = 0};
    kbus_consumer *bplain =
        kbus_consume_batch(bus, "g.bplain", topics, &bp, count_batch, NULL, &err);
    kbus_consumer *bc = kbus_consume_broadcast(bus, topics, count_one, NULL, &err);
    assert_non_null(plain);
    assert_non_null(ctl);
    assert_non_null(bctl);
    assert_non_null(bplain);
    assert_non_null(bc);
    assert_int_equal(fetch_wait_of(plain), 500);
    assert_int_equal(fetch_wait_of(ctl), 7);
    assert_int_equal(fetch_wait_of(bctl), 7);
    assert_int_equal(fetch_wait_of(bplain), 500);
    assert_int_equal(fetch_wait_of(bc), 500); /* cache invalidation: not the control path */
    kbus_consumer_stop(plain);
    kbus_consumer_stop(bctl);
    kbus_consumer_stop(bplain);
    kbus_consumer_stop(bc);

    /* and a control consumer gets what is produced */
    atomic_store(&got, 0);
    Tessera__V1__ApiAccess a = TESSERA__V1__API_ACCESS__INIT;
    a.method = "GET";
    a.path = "/x";
    for (int i = 0; i < 3; i++)
        assert_true(kbus_publish(bus, "t.control", "k", &a.base, NULL, NULL, &err));
    assert_true(kbus_flush(bus, 5000));
    for (int i = 0; i < 300 && atomic_load(&got) < 3; i++)
        usleep(50 * 1000);
    assert_int_equal(atomic_load(&got), 3);
    kbus_consumer_stop(ctl);
    kbus_close(bus, 1000);
}

static void test_no_control_wait_means_fetch_wait(void **state)
{
    fixture *f = *state;
    kbus *bus = bus_with(f, 40, 0);
    static const char *const topics[] = {"t.control", NULL};
    ts_err err = {{0}};
    kbus_consumer *ctl = kbus_consume_control(bus, "g.ctl0", topics, count_one, NULL, &err);
    assert_non_null(ctl);
    assert_int_equal(fetch_wait_of(ctl), 40);
    kbus_consumer_stop(ctl);
    /* a bad control consumer is refused like any other */
    err.msg[0] = 0;
    assert_null(kbus_consume_control(bus, "", topics, count_one, NULL, &err));
    assert_non_null(strstr(err.msg, "required"));
    assert_null(kbus_consume_control(bus, "g", topics, NULL, NULL, &err));
    kbus_close(bus, 1000);
}

/* No wait given: librdkafka's own default, 500 ms (a real broker answers a
 * fetch when a message arrives; the wait is what an idle consumer costs),
 * for the control path too. And consumers stopped while they wait in an
 * idle poll is woken (kbus_wake): the stop returns. */
static void test_default_fetch_wait_is_librdkafkas(void **state)
{
    fixture *f = *state;
    kbus *bus = bus_with(f, 0, 0);
    static const char *const topics[] = {"t.control", NULL};
    ts_err err = {{0}};
    kbus_consumer *plain = kbus_consume(bus, "g.def", topics, count_one, NULL, &err);
    kbus_consumer *ctl = kbus_consume_control(bus, "g.defctl", topics, count_one, NULL, &err);
    assert_non_null(plain);
    assert_non_null(ctl);
    assert_int_equal(fetch_wait_of(plain), 500);
    assert_int_equal(fetch_wait_of(ctl), 500);
    kbus_consumer *both[] = {plain, ctl};
    kbus_consumers_stop(both, 2);
    kbus_close(bus, 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_control_consumers_take_their_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_control_wait_means_fetch_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_default_fetch_wait_is_librdkafkas, setup, teardown),
    };
    return cmocka_run_group_tests_name("kbus_control", tests, NULL, NULL);
}
