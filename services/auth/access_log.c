/* access_log.c: store ApiAccess events. The consumer runs in kbus's batch
 * mode. A message is a lone ApiAccess (older gateways, replays) or an
 * ApiAccessBatch of many (the gateway now); each record is stored under its
 * envelope's event id, or for a batch's record an id derived from the batch's
 * event id and the record's index (access_ids.h), so a replay stores nothing
 * twice.
 *
 * The records of a kbus batch (up to ACCESS_LOG_ROWS_MAX per statement) are
 * stored with one COPY (one statement, so one transaction): about half of
 * PostgreSQL's time per row of an INSERT, whose per-row work for ON CONFLICT
 * (a speculative insertion) and for the parameters' arrays is then skipped. A
 * replayed event makes the COPY fail on the event id's key; the rows are then
 * stored by the keyed INSERT below (its rows passed as 11 arrays, one per
 * column, expanded by unnest(); ON CONFLICT (event_id) DO NOTHING), so a
 * replay changes nothing. Any other COPY failure takes the same path, which
 * classifies the error.
 *
 * Bad records: a message that does not decode, or a lone ApiAccess that is
 * invalid (no method, no event id) or has a value PostgreSQL refuses (a time
 * out of range), rejects the kbus batch; kbus then hands its messages one by
 * one, so only that message goes to the DLQ. An ApiAccessBatch handed alone
 * keeps its good records: an invalid record, or one the keyed INSERT refuses
 * when its rows are then inserted one at a time, is dead-lettered alone
 * (kbus_dead_letter_part: an ApiAccess envelope of its own, under its derived
 * id) and the others are stored. */
#include "access_log.h"

#include "access_ids.h"
#include "libcommon/log.h"
#include "tessera/v1/audit.pb-c.h"

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static kbus_consumer *consumer;
static atomic_uint_fast64_t stored, duplicates, copy_fallbacks, batches, batch_records,
    records_dead_lettered;

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

/* One decoded record: its ApiAccess, the message it came in, its index in
 * that message's ApiAccessBatch (-1: a lone ApiAccess) and its key. */
typedef struct access_row {
    const Tessera__V1__ApiAccess *a;
    const kbus_msg *msg;
    int64_t index;
    char event_id[TS_UUID_STRLEN];
    const char *invalid; /* why it cannot be stored, or NULL */
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

/* The messages of one kbus batch, decoded. */
typedef struct decoded {
    ProtobufCMessage **payloads; /* one per message (NULL where none) */
    size_t n_msgs;
    access_row *rows;
    size_t n_rows, cap_rows;
} decoded;

static access_row *add_row(decoded *d)
{
    if (d->n_rows == d->cap_rows) {
        d->cap_rows = d->cap_rows ? d->cap_rows * 2 : 256;
        d->rows = ts_realloc(d->rows, d->cap_rows * sizeof(*d->rows));
    }
    access_row *r = &d->rows[d->n_rows++];
    memset(r, 0, sizeof(*r));
    return r;
}

static void decoded_free(decoded *d)
{
    for (size_t i = 0; i < d->n_msgs; i++)
        if (d->payloads[i]) protobuf_c_message_free_unpacked(d->payloads[i], NULL);
    free(d->payloads);
    free(d->rows);
}

static bool is_type(const kbus_msg *m, const ProtobufCMessageDescriptor *desc)
{
    return m->env->type && strcmp(m->env->type, desc->name) == 0;
}

/* Decode every message into rows; false (reason set, naming the offset) when
 * one cannot be stored at all: it does not decode, names another type, or is
 * a lone ApiAccess without a valid event id or method. A batch's record
 * without a method is kept with row->invalid set. */
static bool decode_rows(const kbus_msg *msgs, size_t n, decoded *d, ts_err *reason)
{
    d->payloads = ts_calloc(n, sizeof(*d->payloads));
    d->n_msgs = n;
    for (size_t i = 0; i < n; i++) {
        const kbus_msg *m = &msgs[i];
        bool batch = is_type(m, &tessera__v1__api_access_batch__descriptor);
        const ProtobufCMessageDescriptor *desc = batch ? &tessera__v1__api_access_batch__descriptor
                                                       : &tessera__v1__api_access__descriptor;
        d->payloads[i] = envelope_payload(m->env, desc, reason);
        if (!d->payloads[i]) {
            ts_err_prefix(reason, "offset %lld", (long long)m->offset);
            return false;
        }
        if (!batch) {
            access_row *r = add_row(d);
            r->a = (Tessera__V1__ApiAccess *)d->payloads[i];
            r->msg = m;
            r->index = -1;
            if (!ts_uuid_valid(m->env->event_id) || !r->a->method[0]) {
                ts_err_set(reason, "ApiAccess without a valid event id or method (offset %lld)",
                           (long long)m->offset);
                return false;
            }
            ts_strlcpy(r->event_id, m->env->event_id, sizeof(r->event_id));
            continue;
        }
        Tessera__V1__ApiAccessBatch *b = (Tessera__V1__ApiAccessBatch *)d->payloads[i];
        if (!ts_uuid_valid(m->env->event_id)) {
            ts_err_set(reason, "ApiAccessBatch without a valid event id (offset %lld)",
                       (long long)m->offset);
            return false;
        }
        for (size_t j = 0; j < b->n_records; j++) {
            access_row *r = add_row(d);
            r->a = b->records[j];
            r->msg = m;
            r->index = (int64_t)j;
            if (!access_record_id(m->env->event_id, j, r->event_id)) {
                ts_err_set(reason, "ApiAccessBatch of %zu records: too many (offset %lld)",
                           b->n_records, (long long)m->offset);
                return false;
            }
            if (!r->a->method[0]) r->invalid = "ApiAccess without a method";
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
static bool copy_rows(PGconn *conn, const access_row *rows, size_t n, ts_err *reason)
{
    copy_buf b = {0};
    int64_t sec_at = INT64_MIN;
    char sec_text[SEC_TEXT_MAX] = "";
    for (size_t i = 0; i < n; i++) {
        const Tessera__V1__ApiAccess *a = rows[i].a;
        copy_field(&b, rows[i].event_id, true);
        copy_time(&b, a->occurred_at_ms, &sec_at, sec_text);
        copy_field(&b, a->access_key, false);
        copy_field(&b, a->user_id, false);
        copy_field(&b, a->client_addr, false);
        copy_field(&b, a->method, false);
        copy_field(&b, a->path, false);
        copy_int(&b, a->status);
        copy_int(&b, a->latency_us);
        copy_field(&b, a->request_id, false);
        copy_field(&b, rows[i].msg->env->producer, false);
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

static kbus_result insert_rows(PGconn *conn, const access_row *rows, size_t n, ts_err *reason)
{
    array_lit cols[INSERT_COLUMNS] = {{0}};
    for (size_t i = 0; i < n; i++) {
        const Tessera__V1__ApiAccess *a = rows[i].a;
        char at[24], status[16], latency[24];
        snprintf(at, sizeof(at), "%lld", (long long)a->occurred_at_ms);
        snprintf(status, sizeof(status), "%d", a->status);
        snprintf(latency, sizeof(latency), "%lld", (long long)a->latency_us);
        array_add(&cols[0], rows[i].event_id);
        array_add(&cols[1], at);
        array_add(&cols[2], a->access_key);
        array_add(&cols[3], a->user_id);
        array_add(&cols[4], a->client_addr);
        array_add(&cols[5], a->method);
        array_add(&cols[6], a->path);
        array_add(&cols[7], status);
        array_add(&cols[8], latency);
        array_add(&cols[9], a->request_id);
        array_add(&cols[10], rows[i].msg->env->producer);
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

/* ---- one record to the DLQ -------------------------------------------------------- */

/* Dead-letter row (of an ApiAccessBatch) alone: an ApiAccess envelope of its
 * own under its derived id, with the batch envelope's time and producer, so
 * that it can be produced to tessera.audit.v1 again once mended. False when
 * the consumer stopped first. */
static bool dead_letter_row(const access_row *row, const char *why)
{
    const Tessera__V1__Envelope *benv = row->msg->env;
    size_t plen = tessera__v1__api_access__get_packed_size(row->a);
    uint8_t *payload = ts_malloc(plen);
    tessera__v1__api_access__pack(row->a, payload);
    Tessera__V1__Envelope env = TESSERA__V1__ENVELOPE__INIT;
    env.event_id = (char *)row->event_id;
    env.type = (char *)tessera__v1__api_access__descriptor.name;
    env.schema_version = benv->schema_version;
    env.occurred_at_ms = benv->occurred_at_ms;
    env.producer = benv->producer;
    env.correlation_id = row->a->request_id;
    env.subject_id = row->a->user_id;
    env.payload.data = payload;
    env.payload.len = plen;
    size_t len = tessera__v1__envelope__get_packed_size(&env);
    uint8_t *value = ts_malloc(len);
    tessera__v1__envelope__pack(&env, value);
    char reason[900];
    int k = snprintf(reason, sizeof(reason), "record %lld (id %s) of ApiAccessBatch %s: %s",
                     (long long)row->index, row->event_id, benv->event_id, why);
    /* One line (PostgreSQL's messages end with a newline). */
    size_t len_r = k < 0 ? 0 : (size_t)k < sizeof(reason) ? (size_t)k : sizeof(reason) - 1;
    while (len_r > 0 && (reason[len_r - 1] == '\n' || reason[len_r - 1] == ' '))
        reason[--len_r] = 0;
    for (char *c = reason; *c; c++)
        if (*c == '\n' || *c == '\r' || *c == '\t') *c = ' ';
    bool ok = kbus_dead_letter_part(row->msg, value, len, reason);
    if (ok) atomic_fetch_add(&records_dead_lettered, 1);
    free(value);
    free(payload);
    return ok;
}

/* ---- storing ----------------------------------------------------------------------- */

/* rows one INSERT each (after the INSERT of them all was refused for a
 * value): a refused row is dead-lettered alone, the others stored. */
static kbus_result insert_one_by_one(PGconn *conn, const access_row *rows, size_t n, ts_err *reason)
{
    for (size_t i = 0; i < n; i++) {
        ts_err why = {{0}};
        kbus_result r = insert_rows(conn, &rows[i], 1, &why);
        if (r == KBUS_REJECT) {
            if (!dead_letter_row(&rows[i], why.msg)) r = KBUS_RETRY;
        }
        if (r == KBUS_RETRY) {
            *reason = why;
            return KBUS_RETRY;
        }
    }
    return KBUS_DONE;
}

/* Store rows (one chunk): COPY, else the keyed INSERT; when that refuses a
 * value and the rows are one ApiAccessBatch's (alone: split is set), one
 * INSERT per row. */
static kbus_result store_rows(PGconn *conn, const access_row *rows, size_t n, bool split,
                              ts_err *reason)
{
    if (copy_rows(conn, rows, n, reason)) return KBUS_DONE;
    if (PQstatus(conn) != CONNECTION_OK) return KBUS_RETRY; /* the pool reconnects */
    char q[600];
    TLOG_DEBUG("access log batch stored by INSERT", "reason=%s",
               tlog_quote(q, sizeof(q), reason->msg));
    atomic_fetch_add(&copy_fallbacks, 1);
    kbus_result res = insert_rows(conn, rows, n, reason);
    if (res == KBUS_REJECT && split) {
        TLOG_INFO("access log batch refused, inserting its records one by one", "records=%zu", n);
        res = insert_one_by_one(conn, rows, n, reason);
    }
    return res;
}

static kbus_result store_batch(const kbus_msg *msgs, size_t n, void *ctx, ts_err *reason)
{
    svc *s = ctx;
    decoded d = {0};
    access_row *bad = NULL;
    kbus_result res = KBUS_REJECT;
    if (!decode_rows(msgs, n, &d, reason)) goto out;
    /* A batch's invalid records: with other messages, reject them all (kbus
     * hands each message alone); alone, keep them apart and dead-letter them. */
    size_t n_good = 0, n_bad = 0;
    for (size_t i = 0; i < d.n_rows; i++) {
        if (!d.rows[i].invalid) continue;
        if (n > 1) {
            ts_err_set(reason, "record %lld of the ApiAccessBatch at offset %lld: %s",
                       (long long)d.rows[i].index, (long long)d.rows[i].msg->offset,
                       d.rows[i].invalid);
            goto out;
        }
        n_bad++;
    }
    if (n_bad) {
        bad = ts_calloc(n_bad, sizeof(*bad));
        n_bad = 0;
        for (size_t i = 0; i < d.n_rows; i++) {
            if (d.rows[i].invalid)
                bad[n_bad++] = d.rows[i];
            else
                d.rows[n_good++] = d.rows[i];
        }
    } else {
        n_good = d.n_rows;
    }
    PGconn *conn = pg_pool_get(svc_pg(s), 5000, reason);
    if (!conn) {
        res = KBUS_RETRY;
        goto out;
    }
    res = KBUS_DONE;
    bool split = n == 1 && is_type(&msgs[0], &tessera__v1__api_access_batch__descriptor);
    for (size_t from = 0; from < n_good && res == KBUS_DONE; from += ACCESS_LOG_ROWS_MAX) {
        size_t k = n_good - from < ACCESS_LOG_ROWS_MAX ? n_good - from : ACCESS_LOG_ROWS_MAX;
        res = store_rows(conn, d.rows + from, k, split, reason);
    }
    for (size_t i = 0; i < n_bad && res == KBUS_DONE; i++)
        if (!dead_letter_row(&bad[i], bad[i].invalid)) {
            ts_err_set(reason, "stopped while dead-lettering a record");
            res = KBUS_RETRY;
        }
    if (res == KBUS_DONE)
        for (size_t i = 0; i < n; i++)
            if (is_type(&msgs[i], &tessera__v1__api_access_batch__descriptor)) {
                atomic_fetch_add(&batches, 1);
                atomic_fetch_add(&batch_records,
                                 ((Tessera__V1__ApiAccessBatch *)d.payloads[i])->n_records);
            }
    if (res == KBUS_DONE)
        for (size_t i = 0; i < n_good; i++)
            if (d.rows[i].a->access_key && d.rows[i].a->access_key[0])
                touch_keypair(conn, d.rows[i].a->access_key, d.rows[i].a->occurred_at_ms);
    pg_pool_put(svc_pg(s), conn);
out:
    free(bad);
    decoded_free(&d);
    return res;
}

static const struct {
    const char *name, *help;
    atomic_uint_fast64_t *value;
} counters[] = {
    {"tessera_auth_access_records_stored_total", "ApiAccess events stored in the access log.",
     &stored},
    {"tessera_auth_access_records_duplicate_total",
     "ApiAccess events seen again (replays) and ignored.", &duplicates},
    {"tessera_auth_access_batches_copy_fallback_total",
     "Access-log batches whose COPY failed (a replayed event, a bad value) and that the keyed"
     " INSERT stored instead.",
     &copy_fallbacks},
    {"tessera_auth_access_record_batches_total",
     "ApiAccessBatch messages stored (replays included).", &batches},
    {"tessera_auth_access_batch_records_total",
     "ApiAccess records in those ApiAccessBatch messages (divided by them: records per batch).",
     &batch_records},
    {"tessera_auth_access_records_dead_lettered_total",
     "Records of an ApiAccessBatch dead-lettered alone (invalid, or refused by PostgreSQL), their"
     " batch's other records stored.",
     &records_dead_lettered},
};

static void collect(FILE *out, void *ctx)
{
    (void)ctx;
    for (size_t i = 0; i < TS_ARRAY_LEN(counters); i++) {
        metrics_family(out, counters[i].name, "counter", counters[i].help);
        metrics_sample_u64(out, counters[i].name, NULL, atomic_load(counters[i].value));
    }
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
