/* test_kbus_batch.c: kbus's batch mode (kbus_consume_batch, libcommon/kbus_batch.c)
 * against librdkafka's in-process mock cluster (the one tessera-devbus hosts):
 * batches are gathered, an undecodable record in the middle of a batch goes
 * to the DLQ without reaching the handler, a handler that fails on one
 * message gets the batch again one by one so that only that message is
 * dead-lettered, a handler may dead-letter part of a message and keep the
 * rest (kbus_dead_letter_part), and the group's committed offset ends past
 * every record. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "libcommon/deps.h"
#include "libcommon/envelope.h"
#include "libcommon/kbus.h"
#include "tessera/v1/audit.pb-c.h"

#include "mock_kafka.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_RECORDS 10

typedef struct fixture {
    mock_kafka k;
    kbus *bus;
} fixture;

/* What the handler saw. */
typedef struct seen {
    pthread_mutex_t mu;
    int calls, max_n;
    int single[N_RECORDS]; /* times record i came alone (n = 1) */
    int total[N_RECORDS];  /* times record i came at all */
    int done[N_RECORDS];   /* times record i was in a call that returned DONE */
} seen;

static int setup(void **state)
{
    static const char *const topics[] = {"t.batch", KBUS_TOPIC_DLQ, NULL};
    fixture *f = calloc(1, sizeof(*f));
    mock_kafka_start(&f->k, topics);
    ts_err err = {{0}};
    kbus_opts o = {.bootstrap = f->k.bootstrap,
                   .service = "test",
                   .instance = "1",
                   .max_attempts = 2,
                   .retry_backoff_ms = 10,
                   .fetch_wait_ms = 10};
    f->bus = kbus_new(&o, &err);
    assert_non_null(f->bus);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    kbus_close(f->bus, 1000);
    mock_kafka_stop(&f->k);
    free(f);
    return 0;
}

/* Record i is an ApiAccess whose path is "/<i>", or "/poison" or "/flaky";
 * garbage is not an envelope at all. */
static void produce(fixture *f, int i, const char *path, bool garbage)
{
    ts_err err = {{0}};
    char p[32];
    snprintf(p, sizeof(p), "/%d", i);
    if (garbage) {
        static const char junk[] = "\xff\xff\xff not an envelope";
        assert_true(kbus_produce_raw(f->bus, "t.batch", "k", junk, sizeof(junk) - 1, &err));
        return;
    }
    Tessera__V1__ApiAccess a = TESSERA__V1__API_ACCESS__INIT;
    a.method = "GET";
    a.path = path ? (char *)path : p;
    a.request_id = p + 1; /* the index, whatever the path */
    size_t len = 0;
    uint8_t *buf = envelope_pack(&a.base, "test/1", NULL, NULL, &len);
    assert_true(kbus_produce_raw(f->bus, "t.batch", "k", buf, len, &err));
    free(buf);
}

static void produce_records(fixture *f, int garbage_at, int poison_at, int flaky_at)
{
    for (int i = 0; i < N_RECORDS; i++)
        produce(f, i,
                i == poison_at  ? "/poison"
                : i == flaky_at ? "/flaky"
                                : NULL,
                i == garbage_at);
    assert_true(kbus_flush(f->bus, 5000));
}

/* Every call is recorded; a batch holding "/poison" is rejected and one
 * holding "/flaky" asks for a retry, whatever its size. */
static kbus_result handler(const kbus_msg *msgs, size_t n, void *ctx, ts_err *reason)
{
    seen *s = ctx;
    kbus_result r = KBUS_DONE;
    int idx_of[256];
    assert_true(n <= 256);
    pthread_mutex_lock(&s->mu);
    s->calls++;
    if ((int)n > s->max_n) s->max_n = (int)n;
    for (size_t i = 0; i < n; i++) {
        ts_err err = {{0}};
        ProtobufCMessage *m =
            envelope_payload(msgs[i].env, &tessera__v1__api_access__descriptor, &err);
        assert_non_null(m);
        Tessera__V1__ApiAccess *a = (Tessera__V1__ApiAccess *)m;
        int idx = atoi(a->request_id);
        assert_in_range(idx, 0, N_RECORDS - 1);
        assert_int_equal(msgs[i].offset, idx); /* one partition: offset = index */
        idx_of[i] = idx;
        s->total[idx]++;
        if (n == 1) s->single[idx]++;
        if (strcmp(a->path, "/poison") == 0) {
            ts_err_set(reason, "poison record");
            r = KBUS_REJECT;
        } else if (strcmp(a->path, "/flaky") == 0 && r == KBUS_DONE) {
            ts_err_set(reason, "flaky record");
            r = KBUS_RETRY;
        }
        protobuf_c_message_free_unpacked(m, NULL);
    }
    if (r == KBUS_DONE)
        for (size_t i = 0; i < n; i++)
            s->done[idx_of[i]]++;
    pthread_mutex_unlock(&s->mu);
    return r;
}

/* Wait (up to 30 s) until handled + dead-lettered reach want. */
static void wait_settled(fixture *f, uint64_t handled, uint64_t dead)
{
    kbus_stats st;
    for (int i = 0; i < 300; i++) {
        kbus_get_stats(f->bus, &st);
        if (st.handled >= handled && st.dead_lettered >= dead) break;
        usleep(100 * 1000);
    }
    kbus_get_stats(f->bus, &st);
    assert_int_equal(st.handled, handled);
    assert_int_equal(st.dead_lettered, dead);
}

/* The offset the group committed on t.batch partition 0. */
static int64_t committed(fixture *f, const char *group)
{
    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set_log_cb(conf, mock_kafka_quiet_log);
    assert_int_equal(
        rd_kafka_conf_set(conf, "bootstrap.servers", f->k.bootstrap, errstr, sizeof(errstr)),
        RD_KAFKA_CONF_OK);
    assert_int_equal(rd_kafka_conf_set(conf, "group.id", group, errstr, sizeof(errstr)),
                     RD_KAFKA_CONF_OK);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    assert_non_null(rk);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, "t.batch", 0);
    assert_int_equal(rd_kafka_committed(rk, l, 5000), 0);
    int64_t off = l->elems[0].offset;
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_destroy(rk);
    return off;
}

/* The last value of header name in the DLQ record (static buffer). */
static const char *hdr(rd_kafka_message_t *m, const char *name)
{
    static char buf[1100];
    rd_kafka_headers_t *h = NULL;
    const void *v;
    size_t n;
    assert_int_equal(rd_kafka_message_headers(m, &h), 0);
    if (rd_kafka_header_get_last(h, name, &v, &n) != RD_KAFKA_RESP_ERR_NO_ERROR) return "";
    if (n >= sizeof(buf)) n = sizeof(buf) - 1;
    memcpy(buf, v, n);
    buf[n] = 0;
    return buf;
}

/* Read want records from the DLQ; check each one's dlq.offset, the start of
 * its dlq.reason and its dlq.attempts, and its value when values is given. */
static void expect_dlq_values(fixture *f, int want, const int64_t *offsets,
                              const char *const *reasons, const char *const *attempts,
                              const char *const *values)
{
    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set_log_cb(conf, mock_kafka_quiet_log);
    assert_int_equal(
        rd_kafka_conf_set(conf, "bootstrap.servers", f->k.bootstrap, errstr, sizeof(errstr)),
        RD_KAFKA_CONF_OK);
    assert_int_equal(rd_kafka_conf_set(conf, "group.id", "dlq-reader", errstr, sizeof(errstr)),
                     RD_KAFKA_CONF_OK);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    assert_non_null(rk);
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, KBUS_TOPIC_DLQ, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
    assert_int_equal(rd_kafka_assign(rk, l), 0);
    rd_kafka_topic_partition_list_destroy(l);
    int got = 0;
    for (int tries = 0; got < want && tries < 100; tries++) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (!m) continue;
        if (!m->err) {
            assert_true(got < want);
            char off[32];
            snprintf(off, sizeof(off), "%lld", (long long)offsets[got]);
            assert_string_equal(hdr(m, "dlq.topic"), "t.batch");
            assert_string_equal(hdr(m, "dlq.offset"), off);
            const char *reason = hdr(m, "dlq.reason");
            if (strncmp(reason, reasons[got], strlen(reasons[got])) != 0)
                fail_msg("dlq.reason \"%s\" does not start with \"%s\"", reason, reasons[got]);
            assert_string_equal(hdr(m, "dlq.attempts"), attempts[got]);
            if (values) {
                assert_int_equal(m->len, strlen(values[got]));
                assert_memory_equal(m->payload, values[got], m->len);
                assert_int_equal(m->key_len, 1);
                assert_memory_equal(m->key, "k", 1);
            }
            got++;
        }
        rd_kafka_message_destroy(m);
    }
    assert_int_equal(got, want);
    /* Nothing more arrives. */
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 300);
    assert_true(m == NULL || m->err);
    if (m) rd_kafka_message_destroy(m);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
}

static void expect_dlq(fixture *f, int want, const int64_t *offsets, const char *const *reasons,
                       const char *const *attempts)
{
    expect_dlq_values(f, want, offsets, reasons, attempts, NULL);
}

/* Dead-letters part of every message whose path is "/part" and keeps the
 * message (DONE); counts the calls. */
static kbus_result part_handler(const kbus_msg *msgs, size_t n, void *ctx, ts_err *reason)
{
    (void)reason;
    seen *s = ctx;
    for (size_t i = 0; i < n; i++) {
        ts_err err = {{0}};
        ProtobufCMessage *m =
            envelope_payload(msgs[i].env, &tessera__v1__api_access__descriptor, &err);
        assert_non_null(m);
        Tessera__V1__ApiAccess *a = (Tessera__V1__ApiAccess *)m;
        int idx = atoi(a->request_id);
        if (strcmp(a->path, "/part") == 0) {
            char value[32];
            snprintf(value, sizeof(value), "part of %d", idx);
            assert_true(kbus_dead_letter_part(&msgs[i], value, strlen(value), "record 2 of it"));
        }
        pthread_mutex_lock(&s->mu);
        s->done[idx]++;
        pthread_mutex_unlock(&s->mu);
        protobuf_c_message_free_unpacked(m, NULL);
    }
    return KBUS_DONE;
}

/* Record 5's handler dead-letters a part of it and stores the rest: every
 * record is handled once, the DLQ record has the part as its value, the
 * message's key, topic and offset, "rejected: <reason>" and attempts 1. */
static void test_dead_letter_part(void **state)
{
    fixture *f = *state;
    for (int i = 0; i < N_RECORDS; i++)
        produce(f, i, i == 5 ? "/part" : NULL, false);
    assert_true(kbus_flush(f->bus, 5000));
    seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    static const char *const topics[] = {"t.batch", NULL};
    kbus_batch_opts o = {.max_messages = 100, .max_wait_ms = 300};
    ts_err err = {{0}};
    kbus_consumer *c = kbus_consume_batch(f->bus, "g.part", topics, &o, part_handler, &s, &err);
    assert_non_null(c);
    wait_settled(f, N_RECORDS, 1);
    kbus_consumer_stop(c);
    for (int i = 0; i < N_RECORDS; i++)
        assert_int_equal(s.done[i], 1);
    assert_int_equal(committed(f, "g.part"), N_RECORDS);
    static const int64_t offs[] = {5};
    static const char *const reasons[] = {"rejected: record 2 of it"};
    static const char *const attempts[] = {"1"};
    static const char *const values[] = {"part of 5"};
    expect_dlq_values(f, 1, offs, reasons, attempts, values);
}

/* Record 4 of 10 does not decode: the 9 others reach the handler exactly
 * once, in batches (not one by one); record 4 is dead-lettered with
 * attempts 0; the committed offset is 10. */
static void test_undecodable_in_the_middle(void **state)
{
    fixture *f = *state;
    produce_records(f, 4, -1, -1);
    seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    static const char *const topics[] = {"t.batch", NULL};
    kbus_batch_opts o = {.max_messages = 100, .max_wait_ms = 300};
    ts_err err = {{0}};
    kbus_consumer *c = kbus_consume_batch(f->bus, "g.undecodable", topics, &o, handler, &s, &err);
    assert_non_null(c);
    wait_settled(f, N_RECORDS - 1, 1);
    kbus_consumer_stop(c);
    for (int i = 0; i < N_RECORDS; i++) {
        assert_int_equal(s.total[i], i == 4 ? 0 : 1);
        assert_int_equal(s.done[i], i == 4 ? 0 : 1);
    }
    assert_true(s.max_n > 1);
    assert_true(s.calls < N_RECORDS - 1);
    assert_int_equal(committed(f, "g.undecodable"), N_RECORDS);
    static const int64_t offs[] = {4};
    static const char *const reasons[] = {"undecodable: "};
    static const char *const attempts[] = {"0"};
    expect_dlq(f, 1, offs, reasons, attempts);
}

/* Record 3 is rejected and record 7 always asks for a retry: the batch fails,
 * each record is handed alone, 8 are stored, record 3 is dead-lettered after
 * one attempt and record 7 after kafka.max_attempts (2); the committed
 * offset is 10. */
static void test_handler_fails_on_one(void **state)
{
    fixture *f = *state;
    produce_records(f, -1, 3, 7);
    seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    static const char *const topics[] = {"t.batch", NULL};
    kbus_batch_opts o = {.max_messages = 100, .max_wait_ms = 300};
    ts_err err = {{0}};
    kbus_consumer *c = kbus_consume_batch(f->bus, "g.poison", topics, &o, handler, &s, &err);
    assert_non_null(c);
    wait_settled(f, N_RECORDS - 2, 2);
    kbus_consumer_stop(c);
    /* Each good record is stored once (in a batch, or alone after its batch
     * failed); the two bad ones never; they were handed alone once and twice. */
    for (int i = 0; i < N_RECORDS; i++)
        assert_int_equal(s.done[i], i == 3 || i == 7 ? 0 : 1);
    assert_int_equal(s.single[3], 1);
    assert_int_equal(s.single[7], 2);
    assert_true(s.total[3] > s.single[3]); /* it came in a batch first */
    assert_true(s.max_n > 1);
    assert_int_equal(committed(f, "g.poison"), N_RECORDS);
    static const int64_t offs[] = {3, 7};
    static const char *const reasons[] = {"rejected: poison record",
                                          "retries exhausted after 2 attempts: flaky record"};
    static const char *const attempts[] = {"1", "2"};
    expect_dlq(f, 2, offs, reasons, attempts);
}

/* Bad arguments are refused with a message, nothing is started. */
static void test_bad_options(void **state)
{
    fixture *f = *state;
    static const char *const topics[] = {"t.batch", NULL};
    ts_err err = {{0}};
    seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    kbus_batch_opts zero = {.max_messages = 0, .max_wait_ms = 10};
    assert_null(kbus_consume_batch(f->bus, "g", topics, &zero, handler, &s, &err));
    assert_non_null(strstr(err.msg, "batch"));
    kbus_batch_opts huge = {.max_messages = KBUS_BATCH_MAX_MESSAGES + 1, .max_wait_ms = 10};
    assert_null(kbus_consume_batch(f->bus, "g", topics, &huge, handler, &s, &err));
    kbus_batch_opts neg = {.max_messages = 10, .max_wait_ms = -1};
    assert_null(kbus_consume_batch(f->bus, "g", topics, &neg, handler, &s, &err));
    kbus_batch_opts ok = {.max_messages = 10, .max_wait_ms = 10};
    assert_null(kbus_consume_batch(f->bus, "g", topics, NULL, handler, &s, &err));
    err.msg[0] = 0;
    assert_null(kbus_consume_batch(f->bus, "g", topics, &ok, NULL, &s, &err));
    assert_non_null(strstr(err.msg, "handler"));
    assert_null(kbus_consume_batch(f->bus, "", topics, &ok, handler, &s, &err));
}

/* ---- dependency outages: a pause, never the DLQ ------------------------------------ */

typedef struct outage {
    atomic_bool down; /* the "database" the handlers need */
    atomic_int calls;
    atomic_int waits_left; /* single mode: answer KBUS_WAIT this many times */
} outage;

static bool outage_probe(void *ctx, ts_err *err)
{
    outage *o = ctx;
    if (!atomic_load(&o->down)) return true;
    ts_err_set(err, "postgresql: connection refused");
    return false;
}

/* A batch handler that fails (asks for a retry) while the database is down. */
static kbus_result outage_batch(const kbus_msg *msgs, size_t n, void *ctx, ts_err *reason)
{
    (void)msgs, (void)n;
    outage *o = ctx;
    atomic_fetch_add(&o->calls, 1);
    if (atomic_load(&o->down)) {
        ts_err_set(reason, "database: server closed the connection");
        return KBUS_RETRY;
    }
    return KBUS_DONE;
}

static kbus_result wait_then_done(const kbus_msg *msg, void *ctx, ts_err *reason)
{
    (void)msg;
    outage *o = ctx;
    atomic_fetch_add(&o->calls, 1);
    if (atomic_fetch_sub(&o->waits_left, 1) > 0) {
        ts_err_set(reason, "the agent does not answer");
        return KBUS_WAIT;
    }
    return KBUS_DONE;
}

/* While the probe fails, a failing batch waits far past max_attempts (2
 * here) x retry_backoff and nothing reaches the DLQ; the consumer says it is
 * paused; once the probe passes the batch is handed again and handled. */
static void test_outage_pauses_not_dead_letters(void **state)
{
    fixture *f = *state;
    outage o = {.down = true};
    kbus_set_probe(f->bus, outage_probe, &o);
    produce_records(f, -1, -1, -1);
    static const char *const topics[] = {"t.batch", NULL};
    kbus_batch_opts bo = {.max_messages = 100, .max_wait_ms = 100};
    ts_err err = {{0}};
    kbus_consumer *c = kbus_consume_batch(f->bus, "g.outage", topics, &bo, outage_batch, &o, &err);
    assert_non_null(c);
    for (int i = 0; i < 500 && kbus_paused(f->bus, NULL) == 0; i++)
        usleep(20 * 1000);
    usleep(500 * 1000); /* many times max_attempts x retry_backoff */
    /* Paused on the probe: the handler is not called again until it passes. */
    assert_int_equal(atomic_load(&o.calls), 1);
    ts_err why = {{0}};
    assert_int_equal(kbus_paused(f->bus, &why), 1);
    assert_non_null(strstr(why.msg, "connection refused"));
    kbus_stats st;
    kbus_get_stats(f->bus, &st);
    assert_int_equal(st.dead_lettered, 0);
    assert_int_equal(st.handled, 0);
    assert_int_equal(st.pauses, 1);
    atomic_store(&o.down, false);
    wait_settled(f, N_RECORDS, 0);
    assert_int_equal(kbus_paused(f->bus, NULL), 0);
    kbus_get_stats(f->bus, &st);
    assert_true(st.paused_ms > 0);
    kbus_consumer_stop(c);
    assert_int_equal(committed(f, "g.outage"), N_RECORDS);
}

/* KBUS_WAIT needs no probe: the message is tried again after a backoff, past
 * max_attempts, and never dead-lettered. */
static void test_wait_is_never_dead_lettered(void **state)
{
    fixture *f = *state;
    outage o = {.waits_left = 5};
    produce_records(f, -1, -1, -1);
    static const char *const topics[] = {"t.batch", NULL};
    ts_err err = {{0}};
    kbus_consumer *c = kbus_consume(f->bus, "g.wait", topics, wait_then_done, &o, &err);
    assert_non_null(c);
    wait_settled(f, N_RECORDS, 0);
    kbus_consumer_stop(c);
    assert_int_equal(atomic_load(&o.calls), N_RECORDS + 5);
    kbus_stats st;
    kbus_get_stats(f->bus, &st);
    assert_int_equal(st.retried, 0);
    assert_int_equal(committed(f, "g.wait"), N_RECORDS);
}

/* A batch handler whose Redis call timed out (the client reports it to
 * deps.h) while the probe passes: Redis is failing, not down. */
static kbus_result slow_then_done(const kbus_msg *msgs, size_t n, void *ctx, ts_err *reason)
{
    (void)msgs, (void)n;
    outage *o = ctx;
    atomic_fetch_add(&o->calls, 1);
    if (atomic_fetch_sub(&o->waits_left, 1) > 0) {
        deps_failed(DEP_REDIS, "Redis EVALSHA: timed out after 2000 ms");
        ts_err_set(reason, "redis: timed out");
        return KBUS_RETRY;
    }
    deps_answered(DEP_REDIS);
    return KBUS_DONE;
}

/* Slow, not out: while a dependency fails but is not judged down, a retry is
 * repeated past max_attempts (2 here) without a pause and without the DLQ. */
static void test_slow_dependency_neither_pauses_nor_dead_letters(void **state)
{
    fixture *f = *state;
    deps_reset();
    deps_set_policy(&(deps_policy){.failures = 3, .window_ms = 3600 * 1000});
    outage o = {.down = false, .waits_left = 6};
    kbus_set_probe(f->bus, outage_probe, &o);
    produce_records(f, -1, -1, -1);
    static const char *const topics[] = {"t.batch", NULL};
    kbus_batch_opts bo = {.max_messages = 100, .max_wait_ms = 100};
    ts_err err = {{0}};
    kbus_consumer *c = kbus_consume_batch(f->bus, "g.slow", topics, &bo, slow_then_done, &o, &err);
    assert_non_null(c);
    wait_settled(f, N_RECORDS, 0);
    kbus_consumer_stop(c);
    kbus_stats st;
    kbus_get_stats(f->bus, &st);
    assert_int_equal(st.dead_lettered, 0);
    assert_int_equal(st.pauses, 0);
    assert_true(st.slow_retries >= 6);
    assert_false(deps_is_failing(DEP_REDIS));
    assert_int_equal(committed(f, "g.slow"), N_RECORDS);
    deps_set_policy(
        &(deps_policy){.failures = DEPS_DEFAULT_FAILURES, .window_ms = DEPS_DEFAULT_WINDOW_MS});
}

static kbus_result count_done(const kbus_msg *msgs, size_t n, void *ctx, ts_err *reason)
{
    (void)msgs, (void)reason;
    atomic_fetch_add((atomic_int *)ctx, (int)n);
    return KBUS_DONE;
}

/* A group whose committed position the broker dropped (librdkafka's mock
 * keeps 5 MiB a partition) resumes elsewhere: the skipped messages are lost
 * to it, and the bus counts that (an error in the log too). */
static void test_truncated_position_is_counted(void **state)
{
    fixture *f = *state;
    static const char *const topics[] = {"t.batch", NULL};
    kbus_batch_opts bo = {.max_messages = 100, .max_wait_ms = 100};
    atomic_int n = 0;
    ts_err err = {{0}};
    produce(f, 0, NULL, false);
    kbus_consumer *c = kbus_consume_batch(f->bus, "g.trunc", topics, &bo, count_done, &n, &err);
    assert_non_null(c);
    wait_settled(f, 1, 0);
    kbus_consumer_stop(c);
    assert_int_equal(committed(f, "g.trunc"), 1);
    kbus_stats st;
    kbus_get_stats(f->bus, &st);
    assert_int_equal(st.offset_resets, 0);
    /* 8 MiB behind the group's position, one record at a time */
    size_t big = 128 * 1024;
    char *path = malloc(big + 1);
    memset(path, 'p', big);
    path[big] = 0;
    for (int i = 0; i < 64; i++) {
        Tessera__V1__ApiAccess a = TESSERA__V1__API_ACCESS__INIT;
        a.method = "GET";
        a.path = path;
        size_t len = 0;
        uint8_t *buf = envelope_pack(&a.base, "test/1", NULL, NULL, &len);
        assert_true(kbus_produce_raw(f->bus, "t.batch", "k", buf, len, &err));
        free(buf);
        assert_true(kbus_flush(f->bus, 5000));
    }
    free(path);
    c = kbus_consume_batch(f->bus, "g.trunc", topics, &bo, count_done, &n, &err);
    assert_non_null(c);
    for (int i = 0; i < 300; i++) {
        kbus_get_stats(f->bus, &st);
        if (st.offset_resets > 0) break;
        usleep(100 * 1000);
    }
    kbus_consumer_stop(c);
    assert_true(st.offset_resets >= 1);
}

/* The probe is asked only about a KBUS_RETRY: with everything up, a flaky
 * record still goes to the DLQ after max_attempts. */
static void test_retry_with_deps_up_still_dead_letters(void **state)
{
    fixture *f = *state;
    outage o = {.down = false};
    kbus_set_probe(f->bus, outage_probe, &o);
    produce_records(f, -1, -1, 4);
    seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    static const char *const topics[] = {"t.batch", NULL};
    kbus_batch_opts bo = {.max_messages = 100, .max_wait_ms = 100};
    ts_err err = {{0}};
    kbus_consumer *c = kbus_consume_batch(f->bus, "g.flaky", topics, &bo, handler, &s, &err);
    assert_non_null(c);
    wait_settled(f, N_RECORDS - 1, 1);
    kbus_consumer_stop(c);
    assert_int_equal(kbus_paused(f->bus, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_undecodable_in_the_middle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handler_fails_on_one, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dead_letter_part, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_options, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outage_pauses_not_dead_letters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_is_never_dead_lettered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_dependency_neither_pauses_nor_dead_letters, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_truncated_position_is_counted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_with_deps_up_still_dead_letters, setup,
                                        teardown),
    };
    return cmocka_run_group_tests_name("kbus_batch", tests, NULL, NULL);
}
