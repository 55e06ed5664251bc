/* Unit tests: the gateway's buffer of access records (services/gateway/audit_batch.c):
 * batches by count, by bytes and by time, the payload decodes as an
 * ApiAccessBatch with the records in order, close emits what is buffered,
 * records after close go alone at once, a stuck flusher makes records drop
 * instead of waiting, concurrent writers lose and repeat nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "services/gateway/audit_batch.h"
#include "tessera/v1/audit.pb-c.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SEEN 200000

/* What the emit callback saw. */
typedef struct sink {
    pthread_mutex_t mu;
    int batches;
    int max_batch, max_bytes;
    int64_t first_emit_ms;
    pthread_t emit_thread;
    atomic_bool hold; /* emit waits while set */
    atomic_bool in_emit;
    unsigned char *seen; /* times record "/<i>" was emitted */
    int order_errors;    /* a batch whose records were not increasing (one writer) */
    int n_paths;
    char last_path[64];
} sink;

static void sink_init(sink *s)
{
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    s->seen = calloc(MAX_SEEN, 1);
}

static void sink_free(sink *s)
{
    free(s->seen);
    pthread_mutex_destroy(&s->mu);
}

static void on_emit(const uint8_t *payload, size_t len, size_t records, void *ctx)
{
    sink *s = ctx;
    atomic_store(&s->in_emit, true);
    while (atomic_load(&s->hold))
        usleep(1000);
    Tessera__V1__ApiAccessBatch *b = tessera__v1__api_access_batch__unpack(NULL, len, payload);
    assert_non_null(b);
    assert_int_equal(b->n_records, records);
    pthread_mutex_lock(&s->mu);
    if (s->batches++ == 0) s->first_emit_ms = ts_now_mono_ms();
    s->emit_thread = pthread_self();
    if ((int)records > s->max_batch) s->max_batch = (int)records;
    if ((int)len > s->max_bytes) s->max_bytes = (int)len;
    int prev = -1;
    for (size_t i = 0; i < b->n_records; i++) {
        const char *p = b->records[i]->path;
        int idx = atoi(p + 1);
        assert_in_range(idx, 0, MAX_SEEN - 1);
        s->seen[idx]++;
        if (strncmp(b->records[i]->method, "T", 1) == 0 && idx <= prev) s->order_errors++;
        prev = idx;
        s->n_paths++;
        snprintf(s->last_path, sizeof(s->last_path), "%s", p);
    }
    pthread_mutex_unlock(&s->mu);
    tessera__v1__api_access_batch__free_unpacked(b, NULL);
    atomic_store(&s->in_emit, false);
}

/* Add record "/<i>" (method "T": one writer, order checked), padded with
 * pad bytes of user agent. */
static bool add(audit_batch *b, int i, size_t pad, const char *method)
{
    Tessera__V1__ApiAccess a = TESSERA__V1__API_ACCESS__INIT;
    char path[32], ua[4096];
    snprintf(path, sizeof(path), "/%d", i);
    assert_true(pad < sizeof(ua));
    memset(ua, 'u', pad);
    ua[pad] = 0;
    a.method = (char *)method;
    a.path = path;
    a.user_agent = ua;
    uint8_t buf[4300];
    size_t len = tessera__v1__api_access__pack(&a, buf);
    return audit_batch_add(b, buf, len);
}

static int batches_of(sink *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->batches;
    pthread_mutex_unlock(&s->mu);
    return n;
}

static void wait_batches(sink *s, int want)
{
    for (int i = 0; i < 500 && batches_of(s) < want; i++)
        usleep(10000);
    assert_int_equal(batches_of(s), want);
}

static void test_by_count_then_close(void **state)
{
    (void)state;
    sink s;
    sink_init(&s);
    ts_err err = {{0}};
    audit_batch_opts o = {
        .max_records = 3, .max_wait_ms = 60000, .max_bytes = 1 << 20, .max_pending = 8};
    audit_batch *b = audit_batch_new(&o, on_emit, &s, &err);
    assert_non_null(b);
    for (int i = 0; i < 7; i++)
        assert_true(add(b, i, 0, "T"));
    wait_batches(&s, 2); /* two full ones, long before the minute */
    usleep(50000);
    assert_int_equal(batches_of(&s), 2);
    assert_int_equal(s.max_batch, 3);
    audit_batch_close(b); /* the seventh record */
    assert_int_equal(s.batches, 3);
    for (int i = 0; i < 7; i++)
        assert_int_equal(s.seen[i], 1);
    assert_int_equal(s.order_errors, 0);
    assert_string_equal(s.last_path, "/6");
    audit_batch_stats st;
    audit_batch_stats_get(b, &st);
    assert_int_equal(st.batches, 3);
    assert_int_equal(st.records, 7);
    assert_int_equal(st.dropped, 0);
    /* After close: emitted alone at once, on this thread. */
    assert_true(add(b, 7, 0, "T"));
    assert_int_equal(s.batches, 4);
    assert_true(pthread_equal(s.emit_thread, pthread_self()));
    assert_int_equal(s.seen[7], 1);
    audit_batch_close(b); /* idempotent */
    audit_batch_free(b);
    sink_free(&s);
}

static void test_by_time(void **state)
{
    (void)state;
    sink s;
    sink_init(&s);
    ts_err err = {{0}};
    audit_batch_opts o = {
        .max_records = 1000, .max_wait_ms = 80, .max_bytes = 1 << 20, .max_pending = 8};
    audit_batch *b = audit_batch_new(&o, on_emit, &s, &err);
    assert_non_null(b);
    usleep(100000); /* an idle flusher emits nothing */
    assert_int_equal(batches_of(&s), 0);
    int64_t t0 = ts_now_mono_ms();
    assert_true(add(b, 0, 0, "T"));
    assert_true(add(b, 1, 0, "T"));
    wait_batches(&s, 1);
    assert_true(s.first_emit_ms - t0 >= 80);
    assert_true(s.first_emit_ms - t0 < 2000);
    assert_int_equal(s.max_batch, 2);
    /* The next batch gets its own clock. */
    usleep(200000);
    t0 = ts_now_mono_ms();
    assert_true(add(b, 2, 0, "T"));
    wait_batches(&s, 2);
    assert_true(ts_now_mono_ms() - t0 >= 80);
    audit_batch_free(b);
    assert_int_equal(s.batches, 2);
    sink_free(&s);
}

/* Wait 0: whatever is there when the flusher wakes. */
static void test_no_wait(void **state)
{
    (void)state;
    sink s;
    sink_init(&s);
    ts_err err = {{0}};
    audit_batch_opts o = {
        .max_records = 100, .max_wait_ms = 0, .max_bytes = 1 << 20, .max_pending = 8};
    audit_batch *b = audit_batch_new(&o, on_emit, &s, &err);
    assert_non_null(b);
    assert_true(add(b, 0, 0, "T"));
    wait_batches(&s, 1);
    audit_batch_free(b);
    sink_free(&s);
}

static void test_by_bytes(void **state)
{
    (void)state;
    sink s;
    sink_init(&s);
    ts_err err = {{0}};
    audit_batch_opts o = {
        .max_records = 1000, .max_wait_ms = 60000, .max_bytes = 1000, .max_pending = 64};
    audit_batch *b = audit_batch_new(&o, on_emit, &s, &err);
    assert_non_null(b);
    for (int i = 0; i < 20; i++) /* about 310 bytes each: 3 to a batch */
        assert_true(add(b, i, 300, "T"));
    assert_true(add(b, 20, 3000, "T")); /* alone larger than max_bytes */
    assert_true(add(b, 21, 10, "T"));
    audit_batch_free(b);
    for (int i = 0; i < 22; i++)
        assert_int_equal(s.seen[i], 1);
    assert_int_equal(s.max_batch, 3);
    assert_true(s.max_bytes > 3000); /* the big one, alone */
    assert_int_equal(s.batches, 7 + 1 + 1);
    sink_free(&s);
}

static void test_stuck_flusher_drops(void **state)
{
    (void)state;
    sink s;
    sink_init(&s);
    atomic_store(&s.hold, true);
    ts_err err = {{0}};
    audit_batch_opts o = {
        .max_records = 2, .max_wait_ms = 0, .max_bytes = 1 << 20, .max_pending = 2};
    audit_batch *b = audit_batch_new(&o, on_emit, &s, &err);
    assert_non_null(b);
    assert_true(add(b, 0, 0, "T"));
    for (int i = 0; i < 500 && !atomic_load(&s.in_emit); i++)
        usleep(1000);
    assert_true(atomic_load(&s.in_emit)); /* the flusher is stuck in the bus */
    /* 2 pending batches of 2 and the gathering one full: 6 taken, then drops,
     * each add returning at once. */
    int taken = 0, dropped = 0;
    int64_t t0 = ts_now_mono_ms();
    for (int i = 1; i <= 20; i++) {
        if (add(b, i, 0, "T"))
            taken++;
        else
            dropped++;
    }
    assert_true(ts_now_mono_ms() - t0 < 5000); /* a blocked add would wait for ever */
    assert_int_equal(taken, 6);
    assert_int_equal(dropped, 14);
    atomic_store(&s.hold, false);
    audit_batch_free(b);
    int emitted = 0;
    for (int i = 0; i <= 20; i++)
        emitted += s.seen[i];
    assert_int_equal(emitted, 7);
    assert_int_equal(s.order_errors, 0);
    sink_free(&s);
}

typedef struct writer {
    audit_batch *b;
    int from, n;
} writer;

static void *write_many(void *arg)
{
    writer *w = arg;
    for (int i = w->from; i < w->from + w->n; i++)
        assert_true(add(w->b, i, (size_t)(i % 50), "M"));
    return NULL;
}

static void test_concurrent_writers(void **state)
{
    (void)state;
    sink s;
    sink_init(&s);
    ts_err err = {{0}};
    audit_batch_opts o = {
        .max_records = 64, .max_wait_ms = 1, .max_bytes = 1 << 20, .max_pending = 100000};
    audit_batch *b = audit_batch_new(&o, on_emit, &s, &err);
    assert_non_null(b);
    enum { WRITERS = 4, EACH = 20000 };
    pthread_t t[WRITERS];
    writer w[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        w[i] = (writer){b, i * EACH, EACH};
        assert_int_equal(pthread_create(&t[i], NULL, write_many, &w[i]), 0);
    }
    for (int i = 0; i < WRITERS; i++)
        pthread_join(t[i], NULL);
    audit_batch_free(b);
    for (int i = 0; i < WRITERS * EACH; i++)
        if (s.seen[i] != 1) fail_msg("record %d emitted %d times", i, s.seen[i]);
    assert_int_equal(s.n_paths, WRITERS * EACH);
    assert_true(s.max_batch <= 64);
    assert_true(s.batches >= WRITERS * EACH / 64);
    sink_free(&s);
}

static void test_bad_options(void **state)
{
    (void)state;
    sink s;
    sink_init(&s);
    ts_err err = {{0}};
    audit_batch_opts ok = {.max_records = 1, .max_wait_ms = 0, .max_bytes = 64, .max_pending = 1};
    audit_batch_opts bad[] = {ok, ok, ok, ok, ok, ok};
    bad[0].max_records = 0;
    bad[1].max_records = AUDIT_BATCH_MAX_RECORDS + 1;
    bad[2].max_wait_ms = -1;
    bad[3].max_wait_ms = 60001;
    bad[4].max_bytes = 63;
    bad[5].max_pending = 0;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err.msg[0] = 0;
        assert_null(audit_batch_new(&bad[i], on_emit, &s, &err));
        assert_non_null(strstr(err.msg, "audit batch"));
    }
    assert_null(audit_batch_new(&ok, NULL, &s, &err));
    assert_null(audit_batch_new(NULL, on_emit, &s, &err));
    audit_batch *b = audit_batch_new(&ok, on_emit, &s, &err);
    assert_non_null(b);
    audit_batch_free(b);
    assert_int_equal(s.batches, 0);
    sink_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_by_count_then_close),
        cmocka_unit_test(test_by_time),
        cmocka_unit_test(test_no_wait),
        cmocka_unit_test(test_by_bytes),
        cmocka_unit_test(test_stuck_flusher_drops),
        cmocka_unit_test(test_concurrent_writers),
        cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests_name("gateway_audit_batch", tests, NULL, NULL);
}
