/* access_log.c: store ApiAccess events. The consumer runs in kbus's batch
 * mode and stores a batch with one COPY (one statement, so one transaction):
 * about half of PostgreSQL's time per row of an INSERT, whose per-row work for
 * ON CONFLICT (a speculative insertion) and for the parameters' arrays is then
 * skipped. A replayed event (at-least-once delivery) makes the COPY fail on the
 * event id's key; the batch is then stored by the keyed INSERT below (its rows
 * passed as 11 arrays, one per column, expanded by unnest(); ON CONFLICT
 * (event_id) DO NOTHING), so a replay changes nothing. Any other COPY failure
 * takes the same path, which classifies the error (a bad value rejects the
 * batch, and kbus then hands its records one by one so that only the bad one
 * goes to the DLQ). */
#include "access_log.h"

#include "libcommon/log.h"
#include "tessera/v1/audit.pb-c.h"

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static kbus_consumer *consumer;
static atomic_uint_fast64_t stored, duplicates, copy_fallbacks;

static const char insert_sql[] =
    "INSERT INTO auth.access_log (event_id, occurred_at, access_key, user_id, client_addr,"
    " method, path, status, latency_us, request_id, producer)"
    " SELECT e, to_timestamp(t / 1000.0), ak, u, ca, m, p, s, l, r, pr"
    " FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[],"
    " $7::text[], $8::int[], $9::bigint[], $10::text[], $11::text[])"
    " AS x(e, t, ak, u, ca, m, p, s, l, r, pr)"
    " ON CONFLICT (event_id) DO NOTHING";
#define INSERT_COLUMNS 11

/* keypairs.last_used from the stored access. Writing the keypair row for
 * every request cost as much as the insert itself under load, so each key's
 * row is written at most once per LAST_USED_RESOLUTION_MS: last_used is that
 * precise. A small direct-mapped cache (only the consumer thread touches it)
 * remembers the newest time written per key; a collision only costs an extra
 * UPDATE. greatest() keeps the newest time when events arrive out of order. */
#define LAST_USED_RESOLUTION_MS 10000
#define LAST_USED_SLOTS 4096

static struct {
    char access_key[24];
    int64_t written_ms;
} last_used_cache[LAST_USED_SLOTS];

static const char last_used_sql[] =
    "UPDATE auth.keypairs SET last_used = greatest(last_used, to_timestamp($2::bigint / 1000.0))"
    " WHERE access_key = $1";

static void touch_keypair(PGconn *conn, const char *access_key, int64_t at_ms)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const char *p = access_key; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    typeof(last_used_cache[0]) *e = &last_used_cache[h % LAST_USED_SLOTS];
    if (strcmp(e->access_key, access_key) == 0 && at_ms < e->written_ms + LAST_USED_RESOLUTION_MS)
        return;
    char at[24];
    snprintf(at, sizeof(at), "%lld", (long long)at_ms);
    const char *params[] = {access_key, at};
    PGresult *r = PQexecParams(conn, last_used_sql, 2, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        char q[600];
        TLOG_WARN("could not update keypairs.last_used", "access_key=%s error=%s", access_key,
                  tlog_quote(q, sizeof(q), PQresultErrorMessage(r)));
    } else {
        ts_strlcpy(e->access_key, access_key, sizeof(e->access_key));
        e->written_ms = at_ms;
    }
    PQclear(r);
}

/* One decoded record. */
typedef struct access_row {
    Tessera__V1__ApiAccess *a;
} access_row;

/* One column's values as a PostgreSQL array literal: {"a","b\\"c"}. Every
 * element is quoted, so no value reads as NULL or splits the array. */
typedef struct array_lit {
    char *p;
    size_t len, cap;
} array_lit;

static void array_put(array_lit *a, char c)
{
    if (a->len + 2 > a->cap) {
        a->cap = a->cap ? a->cap * 2 : 4096;
        a->p = ts_realloc(a->p, a->cap);
    }
    a->p[a->len++] = c;
}

static void array_add(array_lit *a, const char *v)
{
    array_put(a, a->len ? ',' : '{');
    array_put(a, '"');
    for (const char *c = v ? v : ""; *c; c++) {
        if (*c == '"' || *c == '\\') array_put(a, '\\');
        array_put(a, *c);
    }
    array_put(a, '"');
}

static const char *array_end(array_lit *a)
{
    if (!a->len) array_put(a, '{');
    array_put(a, '}');
    a->p[a->len] = 0;
    return a->p;
}

/* Decode and check every record; false (reason set, naming the offset) at the
 * first bad one: the batch is then rejected and kbus hands its records one by
 * one, so that only the bad one goes to the DLQ. */
static bool decode_rows(const kbus_msg *msgs, size_t n, access_row *rows, ts_err *reason)
{
    for (size_t i = 0; i < n; i++) {
        ProtobufCMessage *m =
            envelope_payload(msgs[i].env, &tessera__v1__api_access__descriptor, reason);
        if (!m) {
            ts_err_prefix(reason, "offset %lld", (long long)msgs[i].offset);
            return false;
        }
        Tessera__V1__ApiAccess *a = (Tessera__V1__ApiAccess *)m;
        rows[i].a = a;
        if (!ts_uuid_valid(msgs[i].env->event_id) || !a->method[0]) {
            ts_err_set(reason, "ApiAccess without a valid event id or method (offset %lld)",
                       (long long)msgs[i].offset);
            return false;
        }
    }
    return true;
}

/* ---- COPY ------------------------------------------------------------------------ */

static const char copy_sql[] =
    "COPY auth.access_log (event_id, occurred_at, access_key, user_id, client_addr, method, path,"
    " status, latency_us, request_id, producer) FROM STDIN";

typedef struct copy_buf {
    char *p;
    size_t len, cap;
} copy_buf;

static void copy_reserve(copy_buf *b, size_t n)
{
    while (b->len + n + 1 > b->cap) {
        b->cap = b->cap ? b->cap * 2 : 16384;
        b->p = ts_realloc(b->p, b->cap);
    }
}

/* One text column in COPY's text format, after a tab unless it is the first:
 * backslash, tab, newline and carriage return escaped. Runs without them are
 * copied whole. */
static void copy_field(copy_buf *b, const char *v, bool first)
{
    size_t n = v ? strlen(v) : 0;
    copy_reserve(b, 2 * n + 1);
    if (!first) b->p[b->len++] = '\t';
    while (n) {
        size_t run = strcspn(v, "\\\t\n\r");
        memcpy(b->p + b->len, v, run);
        b->len += run;
        if (run == n) break;
        char c = v[run];
        b->p[b->len++] = '\\';
        b->p[b->len++] = c == '\\' ? '\\' : c == '\t' ? 't' : c == '\n' ? 'n' : 'r';
        v += run + 1;
        n -= run + 1;
    }
}

/* A decimal integer column (no escaping needed), after a tab. */
static void copy_int(copy_buf *b, int64_t v)
{
    char tmp[24], *p = tmp + sizeof(tmp);
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) *--p = '-';
    size_t len = (size_t)(tmp + sizeof(tmp) - p);
    copy_reserve(b, len + 1);
    b->p[b->len++] = '\t';
    memcpy(b->p + b->len, p, len);
    b->len += len;
}

#define SEC_TEXT_MAX 48 /* "YYYY-MM-DD HH:MM:SS", years of up to 11 characters */

/* occurred_at (milliseconds since the epoch) as an ISO 8601 UTC time, after a
 * tab. The date and time of day are formatted once per second seen (*sec_at,
 * *sec_text: the last one), as a batch's records mostly share it. */
static void copy_time(copy_buf *b, int64_t ms, int64_t *sec_at, char sec_text[SEC_TEXT_MAX])
{
    int64_t secs = ms / 1000 - (ms % 1000 < 0); /* floor, without overflow at INT64_MIN */
    if (secs != *sec_at) {
        time_t t = (time_t)secs;
        struct tm tm;
        if (gmtime_r(&t, &tm))
            snprintf(sec_text, SEC_TEXT_MAX, "%04d-%02d-%02d %02d:%02d:%02d", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        else /* far out of range: COPY refuses it, the INSERT judges */
            snprintf(sec_text, SEC_TEXT_MAX, "out of range");
        *sec_at = secs;
    }
    int frac = (int)(ms - secs * 1000);
    char tail[8] = {'.',
                    (char)('0' + frac / 100),
                    (char)('0' + frac / 10 % 10),
                    (char)('0' + frac % 10),
                    '+',
                    '0',
                    '0',
                    0};
    size_t n = strlen(sec_text);
    copy_reserve(b, n + 9);
    b->p[b->len++] = '\t';
    memcpy(b->p + b->len, sec_text, n);
    memcpy(b->p + b->len + n, tail, 7);
    b->len += n + 7;
}

/* The batch in one COPY; false when it failed (nothing stored; the
 * connection is idle again unless it broke). */
static bool copy_rows(PGconn *conn, const kbus_msg *msgs, const access_row *rows, size_t n,
                      ts_err *reason)
{
    copy_buf b = {0};
    int64_t sec_at = INT64_MIN;
    char sec_text[SEC_TEXT_MAX] = "";
    for (size_t i = 0; i < n; i++) {
        const Tessera__V1__ApiAccess *a = rows[i].a;
        copy_field(&b, msgs[i].env->event_id, true);
        copy_time(&b, a->occurred_at_ms, &sec_at, sec_text);
        copy_field(&b, a->access_key, false);
        copy_field(&b, a->user_id, false);
        copy_field(&b, a->client_addr, false);
        copy_field(&b, a->method, false);
        copy_field(&b, a->path, false);
        copy_int(&b, a->status);
        copy_int(&b, a->latency_us);
        copy_field(&b, a->request_id, false);
        copy_field(&b, msgs[i].env->producer, false);
        copy_reserve(&b, 1);
        b.p[b.len++] = '\n';
    }
    bool ok = false;
    PGresult *r = PQexec(conn, copy_sql);
    if (PQresultStatus(r) == PGRES_COPY_IN) {
        bool sent = PQputCopyData(conn, b.p, (int)b.len) == 1;
        PQputCopyEnd(conn, sent ? NULL : "the client could not send the rows");
        PQclear(r);
        r = PQgetResult(conn);
        ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        if (ok) atomic_fetch_add(&stored, (uint_fast64_t)atoll(PQcmdTuples(r)));
    }
    if (!ok) ts_err_set(reason, "copy access_log (%zu records): %s", n, PQerrorMessage(conn));
    PQclear(r);
    while ((r = PQgetResult(conn)) != NULL) /* back to idle */
        PQclear(r);
    free(b.p);
    return ok;
}

/* ---- the keyed INSERT ------------------------------------------------------------- */

static kbus_result insert_rows(PGconn *conn, const kbus_msg *msgs, const access_row *rows, size_t n,
                               ts_err *reason)
{
    array_lit cols[INSERT_COLUMNS] = {{0}};
    for (size_t i = 0; i < n; i++) {
        const Tessera__V1__ApiAccess *a = rows[i].a;
        char at[24], status[16], latency[24];
        snprintf(at, sizeof(at), "%lld", (long long)a->occurred_at_ms);
        snprintf(status, sizeof(status), "%d", a->status);
        snprintf(latency, sizeof(latency), "%lld", (long long)a->latency_us);
        array_add(&cols[0], msgs[i].env->event_id);
        array_add(&cols[1], at);
        array_add(&cols[2], a->access_key);
        array_add(&cols[3], a->user_id);
        array_add(&cols[4], a->client_addr);
        array_add(&cols[5], a->method);
        array_add(&cols[6], a->path);
        array_add(&cols[7], status);
        array_add(&cols[8], latency);
        array_add(&cols[9], a->request_id);
        array_add(&cols[10], msgs[i].env->producer);
    }
    const char *params[INSERT_COLUMNS];
    for (int c = 0; c < INSERT_COLUMNS; c++)
        params[c] = array_end(&cols[c]);
    PGresult *r = PQexecParams(conn, insert_sql, INSERT_COLUMNS, NULL, params, NULL, NULL, 0);
    for (int c = 0; c < INSERT_COLUMNS; c++)
        free(cols[c].p);
    kbus_result res = KBUS_DONE;
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        ts_err_set(reason, "insert access_log (%zu records): %s", n, PQresultErrorMessage(r));
        /* A constraint or type error will not heal by retrying. */
        const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        res = state && (state[0] == '2' && state[1] == '2') ? KBUS_REJECT : KBUS_RETRY;
    } else {
        size_t inserted = (size_t)atoll(PQcmdTuples(r));
        if (inserted > n) inserted = n;
        atomic_fetch_add(&stored, inserted);
        atomic_fetch_add(&duplicates, n - inserted);
    }
    PQclear(r);
    return res;
}

static kbus_result store_batch(const kbus_msg *msgs, size_t n, void *ctx, ts_err *reason)
{
    svc *s = ctx;
    access_row *rows = ts_calloc(n, sizeof(*rows));
    kbus_result res = KBUS_REJECT;
    if (!decode_rows(msgs, n, rows, reason)) goto out;
    PGconn *conn = pg_pool_get(svc_pg(s), 5000, reason);
    if (!conn) {
        res = KBUS_RETRY;
        goto out;
    }
    if (copy_rows(conn, msgs, rows, n, reason)) {
        res = KBUS_DONE;
    } else if (PQstatus(conn) != CONNECTION_OK) {
        res = KBUS_RETRY; /* reason says why; the pool reconnects */
    } else {
        char q[600];
        TLOG_DEBUG("access log batch stored by INSERT", "reason=%s",
                   tlog_quote(q, sizeof(q), reason->msg));
        atomic_fetch_add(&copy_fallbacks, 1);
        res = insert_rows(conn, msgs, rows, n, reason);
    }
    if (res == KBUS_DONE)
        for (size_t i = 0; i < n; i++)
            if (rows[i].a->access_key && rows[i].a->access_key[0])
                touch_keypair(conn, rows[i].a->access_key, rows[i].a->occurred_at_ms);
    pg_pool_put(svc_pg(s), conn);
out:
    for (size_t i = 0; i < n; i++)
        if (rows[i].a) protobuf_c_message_free_unpacked(&rows[i].a->base, NULL);
    free(rows);
    return res;
}

static void collect(FILE *out, void *ctx)
{
    (void)ctx;
    metrics_family(out, "tessera_auth_access_records_stored_total", "counter",
                   "ApiAccess events stored in the access log.");
    metrics_sample_u64(out, "tessera_auth_access_records_stored_total", NULL, atomic_load(&stored));
    metrics_family(out, "tessera_auth_access_records_duplicate_total", "counter",
                   "ApiAccess events seen again (replays) and ignored.");
    metrics_sample_u64(out, "tessera_auth_access_records_duplicate_total", NULL,
                       atomic_load(&duplicates));
    metrics_family(out, "tessera_auth_access_batches_copy_fallback_total", "counter",
                   "Access-log batches whose COPY failed (a replayed event, a bad value) and that"
                   " the keyed INSERT stored instead.");
    metrics_sample_u64(out, "tessera_auth_access_batches_copy_fallback_total", NULL,
                       atomic_load(&copy_fallbacks));
}

bool access_log_start(svc *s, const access_log_opts *o, ts_err *err)
{
    static const char *const topics[] = {ACCESS_LOG_TOPIC, NULL};
    metrics_add(svc_metrics(s), collect, NULL);
    kbus_batch_opts bo = {.max_messages = o->batch_size, .max_wait_ms = o->batch_wait_ms};
    consumer = kbus_consume_batch(svc_bus(s), ACCESS_LOG_GROUP, topics, &bo, store_batch, s, err);
    return consumer != NULL;
}

void access_log_stop(void)
{
    if (consumer) kbus_consumer_stop(consumer);
    consumer = NULL;
}
