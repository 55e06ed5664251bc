/* audit_batch.c: the gateway's buffer of access records (audit_batch.h).
 *
 * One shared buffer under a mutex: with http.threads about the CPU count, the
 * mutex is held for one memcpy of a few hundred bytes per request, cheaper
 * than per-thread buffers that a flusher would have to visit and lock anyway
 * to honour max_wait_ms. Full batches go to a ready list; the flusher takes
 * the ready list, and the gathering batch once its time is up, and emits them
 * outside the mutex. Emptied buffers are kept for reuse. */
#include "audit_batch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ApiAccessBatch.records: field 1, wire type 2 (length-delimited). */
#define RECORDS_TAG 0x0a
/* The tag and the longest varint of a length. */
#define FRAME_MAX 11

typedef struct abuf {
    struct abuf *next;
    uint8_t *p;
    size_t len, cap, records;
} abuf;

struct audit_batch {
    audit_batch_opts o;
    audit_batch_emit_fn emit;
    void *ctx;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    abuf *cur;        /* gathering */
    int64_t first_ms; /* monotonic time of cur's first record */
    abuf *ready, **ready_tail;
    int ready_n;
    abuf *spare; /* emptied buffers */
    bool closing, closed, joined;
    pthread_t thread;
    atomic_uint_fast64_t batches, records, dropped;
};

static abuf *buf_get(audit_batch *b)
{
    abuf *a = b->spare;
    if (a) {
        b->spare = a->next;
        a->next = NULL;
        a->len = a->records = 0;
        return a;
    }
    return ts_calloc(1, sizeof(abuf));
}

static size_t frame(uint8_t *out, size_t len)
{
    size_t n = 0;
    out[n++] = RECORDS_TAG;
    do {
        uint8_t byte = (uint8_t)(len & 0x7f);
        len >>= 7;
        out[n++] = byte | (len ? 0x80 : 0);
    } while (len);
    return n;
}

static void buf_append(abuf *a, const uint8_t *rec, size_t len)
{
    if (a->len + len + FRAME_MAX > a->cap) {
        size_t cap = a->cap ? a->cap : 4096;
        while (a->len + len + FRAME_MAX > cap)
            cap *= 2;
        a->p = ts_realloc(a->p, cap);
        a->cap = cap;
    }
    a->len += frame(a->p + a->len, len);
    memcpy(a->p + a->len, rec, len);
    a->len += len;
    a->records++;
}

/* Move cur to the ready list (mutex held); a fresh buffer gathers. */
static void seal(audit_batch *b)
{
    *b->ready_tail = b->cur;
    b->ready_tail = &b->cur->next;
    b->ready_n++;
    b->cur = buf_get(b);
}

static void emit(audit_batch *b, const abuf *a)
{
    b->emit(a->p, a->len, a->records, b->ctx);
    atomic_fetch_add(&b->batches, 1);
    atomic_fetch_add(&b->records, a->records);
}

bool audit_batch_add(audit_batch *b, const uint8_t *rec, size_t len)
{
    bool wake = false;
    pthread_mutex_lock(&b->mu);
    if (b->closed) {
        pthread_mutex_unlock(&b->mu);
        abuf alone = {0};
        buf_append(&alone, rec, len);
        emit(b, &alone);
        free(alone.p);
        return true;
    }
    abuf *c = b->cur;
    if (c->records >= (size_t)b->o.max_records ||
        (c->records > 0 && c->len + len + FRAME_MAX > b->o.max_bytes)) {
        if (b->ready_n >= b->o.max_pending) {
            pthread_mutex_unlock(&b->mu);
            atomic_fetch_add(&b->dropped, 1);
            return false;
        }
        seal(b);
        c = b->cur;
        wake = true;
    }
    if (c->records == 0) {
        b->first_ms = ts_now_mono_ms();
        wake = true; /* the flusher starts this batch's clock */
    }
    buf_append(c, rec, len);
    if (c->records >= (size_t)b->o.max_records && b->ready_n < b->o.max_pending) seal(b);
    pthread_mutex_unlock(&b->mu);
    if (wake) pthread_cond_signal(&b->cv);
    return true;
}

static struct timespec mono_at(int64_t ms)
{
    return (struct timespec){.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
}

static void *flusher_main(void *arg)
{
    audit_batch *b = arg;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        /* Wait for a full batch, the gathering one's deadline, or a close. */
        while (!b->ready && !b->closing) {
            if (b->cur->records == 0) {
                pthread_cond_wait(&b->cv, &b->mu);
                continue;
            }
            int64_t due = b->first_ms + b->o.max_wait_ms;
            if (ts_now_mono_ms() >= due) break;
            struct timespec ts = mono_at(due);
            pthread_cond_timedwait(&b->cv, &b->mu, &ts);
        }
        if (b->cur->records > 0 &&
            (b->closing || ts_now_mono_ms() >= b->first_ms + b->o.max_wait_ms))
            seal(b);
        abuf *list = b->ready;
        b->ready = NULL;
        b->ready_tail = &b->ready;
        b->ready_n = 0;
        if (!list && b->closing) {
            b->closed = true; /* from now on add() emits at once */
            break;
        }
        pthread_mutex_unlock(&b->mu);
        abuf *last = NULL;
        for (abuf *a = list; a; a = a->next) {
            emit(b, a);
            last = a;
        }
        pthread_mutex_lock(&b->mu);
        if (last) {
            last->next = b->spare;
            b->spare = list;
        }
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

audit_batch *audit_batch_new(const audit_batch_opts *o, audit_batch_emit_fn emit_fn, void *ctx,
                             ts_err *err)
{
    if (!o || !emit_fn) {
        ts_err_set(err, "audit batch: options and an emit callback are required");
        return NULL;
    }
    if (o->max_records < 1 || o->max_records > AUDIT_BATCH_MAX_RECORDS || o->max_wait_ms < 0 ||
        o->max_wait_ms > 60000 || o->max_bytes < 64 || o->max_pending < 1) {
        ts_err_set(err,
                   "audit batch: records %d (1..%d), wait %d ms (0..60000), bytes %zu (>= 64),"
                   " pending %d (>= 1)",
                   o->max_records, AUDIT_BATCH_MAX_RECORDS, o->max_wait_ms, o->max_bytes,
                   o->max_pending);
        return NULL;
    }
    audit_batch *b = ts_calloc(1, sizeof(*b));
    b->o = *o;
    b->emit = emit_fn;
    b->ctx = ctx;
    pthread_mutex_init(&b->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&b->cv, &ca);
    pthread_condattr_destroy(&ca);
    b->cur = buf_get(b);
    b->ready_tail = &b->ready;
    int rc = pthread_create(&b->thread, NULL, flusher_main, b);
    if (rc != 0) {
        ts_err_set(err, "audit batch: flusher thread: %s", strerror(rc));
        free(b->cur);
        pthread_cond_destroy(&b->cv);
        pthread_mutex_destroy(&b->mu);
        free(b);
        return NULL;
    }
    return b;
}

void audit_batch_close(audit_batch *b)
{
    if (!b) return;
    pthread_mutex_lock(&b->mu);
    bool join = !b->joined;
    b->closing = true;
    b->joined = true;
    pthread_mutex_unlock(&b->mu);
    if (!join) return;
    pthread_cond_signal(&b->cv);
    pthread_join(b->thread, NULL);
}

void audit_batch_free(audit_batch *b)
{
    if (!b) return;
    audit_batch_close(b);
    abuf *lists[] = {b->cur, b->spare};
    for (size_t i = 0; i < TS_ARRAY_LEN(lists); i++)
        for (abuf *a = lists[i], *next; a; a = next) {
            next = a->next;
            free(a->p);
            free(a);
        }
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

void audit_batch_stats_get(audit_batch *b, audit_batch_stats *out)
{
    out->batches = atomic_load(&b->batches);
    out->records = atomic_load(&b->records);
    out->dropped = atomic_load(&b->dropped);
}
