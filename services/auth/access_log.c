/* access_log.c: store ApiAccess events. The consumer runs in kbus's batch
 * mode. A message is a lone ApiAccess (older gateways, replays) or an
 * ApiAccessBatch of many (the gateway now). Each message's records become one
 * block of auth.access_blocks (access_block.h) under the message's event id:
 * a batch's record i under an id derived from the batch's event id and i
 * (access_ids.h), a lone ApiAccess under its event id. Blocks whose id is
 * already stored (a replay) are skipped; the others are written by one binary
 * COPY per up to ACCESS_LOG_ROWS_MAX records. A COPY that meets a block
 * stored meanwhile (another consumer, during a rebalance) is redone after
 * looking again.
 *
 * Bad records: a message that does not decode, or a lone ApiAccess that is
 * invalid (no event id, or access_record_invalid: no method, a time out of
 * range, text that is not UTF-8), rejects the kbus batch; kbus then hands its
 * messages one by one, so only that message goes to the DLQ. An ApiAccessBatch
 * handed alone keeps its good records: an invalid record is dead-lettered
 * alone (kbus_dead_letter_part: an ApiAccess envelope of its own, under its
 * derived id) and the others are stored. A value PostgreSQL refuses all the
 * same rejects the message(s) whole. */
#include "access_log.h"

#include "access_block.h"
#include "access_ids.h"
#include "libcommon/log.h"
#include "tessera/v1/audit.pb-c.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static kbus_consumer *consumer;
static atomic_uint_fast64_t stored, duplicates, blocks_stored, batches, batch_records,
    records_dead_lettered;

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
 * a lone ApiAccess without a valid event id or that access_record_invalid()
 * refuses. A batch's invalid record is kept with row->invalid set. */
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
            const char *why = access_record_invalid(r->a);
            if (why) {
                ts_err_set(reason, "ApiAccess at offset %lld: %s", (long long)m->offset, why);
                return false;
            }
            for (int k = 0; k < 36; k++) /* the id as PostgreSQL prints it */
                r->event_id[k] = (char)tolower((unsigned char)m->env->event_id[k]);
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
            r->invalid = access_record_invalid(r->a);
        }
    }
    return true;
}

/* ---- blocks ---------------------------------------------------------------------- */

/* One message's good records: rows[from .. from + n) of the batch. */
typedef struct block {
    const kbus_msg *msg;
    size_t from, n;
    char id[TS_UUID_STRLEN]; /* lower case */
    bool stored;             /* already in auth.access_blocks (or earlier in this batch) */
} block;

/* The good rows (in message order) as blocks, one per message that has any. */
static block *make_blocks(const access_row *rows, size_t n_rows, size_t *n_blocks)
{
    block *b = ts_calloc(n_rows ? n_rows : 1, sizeof(*b));
    size_t k = 0;
    for (size_t i = 0; i < n_rows; i++) {
        if (k && b[k - 1].msg == rows[i].msg) {
            b[k - 1].n++;
            continue;
        }
        b[k].msg = rows[i].msg;
        b[k].from = i;
        b[k].n = 1;
        for (int c = 0; c < 36; c++)
            b[k].id[c] = (char)tolower((unsigned char)rows[i].msg->env->event_id[c]);
        k++;
    }
    *n_blocks = k;
    return b;
}

/* Mark the blocks already stored, and those whose id came earlier in this
 * batch (the same message delivered twice). False when the query failed. */
static bool find_stored(PGconn *conn, block *b, size_t n, ts_err *reason)
{
    char *ids = ts_malloc(n * (TS_UUID_STRLEN + 1) + 3);
    size_t len = 0;
    ids[len++] = '{';
    for (size_t i = 0; i < n; i++) {
        if (i) ids[len++] = ',';
        memcpy(ids + len, b[i].id, 36);
        len += 36;
    }
    ids[len++] = '}';
    ids[len] = 0;
    const char *params[] = {ids};
    PGresult *r = PQexecParams(conn,
                               "SELECT block_id::text FROM auth.access_blocks"
                               " WHERE block_id = ANY($1::uuid[])",
                               1, NULL, params, NULL, NULL, 0);
    free(ids);
    bool ok = PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok) ts_err_set(reason, "look up access blocks: %s", PQresultErrorMessage(r));
    for (size_t i = 0; ok && i < n; i++) {
        b[i].stored = false;
        for (int row = 0; row < PQntuples(r) && !b[i].stored; row++)
            b[i].stored = strcmp(PQgetvalue(r, row, 0), b[i].id) == 0;
        for (size_t j = 0; j < i && !b[i].stored; j++)
            b[i].stored = strcmp(b[j].id, b[i].id) == 0;
    }
    PQclear(r);
    return ok;
}

/* blocks[0 .. n) that are not stored, in one binary COPY (one statement, so
 * all or nothing). False when the COPY failed (reason and sqlstate set; the
 * connection is idle again unless it broke). */
static bool copy_blocks(PGconn *conn, const access_row *rows, const block *blocks, size_t n,
                        char sqlstate[6], ts_err *reason)
{
    copy_bin data = {0};
    const Tessera__V1__ApiAccess **recs = NULL;
    const char **ids = NULL;
    size_t cap = 0, n_rows = 0, n_blocks = 0;
    access_copy_begin(&data);
    for (size_t i = 0; i < n; i++) {
        const block *b = &blocks[i];
        if (b->stored) continue;
        if (b->n > cap) {
            cap = b->n;
            recs = ts_realloc(recs, cap * sizeof(*recs));
            ids = ts_realloc(ids, cap * sizeof(*ids));
        }
        for (size_t j = 0; j < b->n; j++) {
            recs[j] = rows[b->from + j].a;
            ids[j] = rows[b->from + j].event_id;
        }
        access_copy_block(&data, b->id, b->msg->env->producer, recs, ids, b->n);
        n_rows += b->n;
        n_blocks++;
    }
    access_copy_end(&data);
    free(recs);
    free(ids);
    sqlstate[0] = 0;
    if (!n_blocks) {
        free(data.p);
        return true;
    }
    bool ok = false;
    PGresult *r = PQexec(conn, ACCESS_BLOCKS_COPY_SQL);
    if (PQresultStatus(r) == PGRES_COPY_IN) {
        bool sent = PQputCopyData(conn, (const char *)data.p, (int)data.len) == 1;
        PQputCopyEnd(conn, sent ? NULL : "the client could not send the blocks");
        PQclear(r);
        r = PQgetResult(conn);
        ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    }
    if (ok) {
        atomic_fetch_add(&stored, n_rows);
        atomic_fetch_add(&blocks_stored, n_blocks);
    } else {
        const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        ts_strlcpy(sqlstate, state ? state : "", 6);
        ts_err_set(reason, "copy %zu access blocks (%zu records): %s", n_blocks, n_rows,
                   PQerrorMessage(conn));
    }
    PQclear(r);
    while ((r = PQgetResult(conn)) != NULL) /* back to idle */
        PQclear(r);
    free(data.p);
    return ok;
}

/* Store the blocks: look up which are stored, COPY the rest in chunks of up
 * to ACCESS_LOG_ROWS_MAX records (a block is never split). A COPY that meets
 * a block stored since the look-up (unique violation) is redone after
 * looking again, a few times. */
static kbus_result store_blocks(PGconn *conn, const access_row *rows, block *blocks, size_t n,
                                ts_err *reason)
{
    for (size_t from = 0; from < n;) {
        size_t to = from, records = 0;
        while (to < n && (to == from || records + blocks[to].n <= ACCESS_LOG_ROWS_MAX))
            records += blocks[to++].n;
        for (int attempt = 0;; attempt++) {
            if (attempt == 3) return KBUS_RETRY; /* kbus retries the batch later */
            if (!find_stored(conn, blocks + from, to - from, reason)) return KBUS_RETRY;
            char state[6];
            if (copy_blocks(conn, rows, blocks + from, to - from, state, reason)) break;
            if (PQstatus(conn) != CONNECTION_OK) return KBUS_WAIT; /* the pool reconnects */
            if (strcmp(state, "23505") == 0) continue; /* stored meanwhile: look again */
            /* A value refused (data or constraint error) will not heal by retrying. */
            return state[0] == '2' && (state[1] == '2' || state[1] == '3') ? KBUS_REJECT
                                                                           : KBUS_RETRY;
        }
        for (size_t i = from; i < to; i++)
            if (blocks[i].stored) atomic_fetch_add(&duplicates, blocks[i].n);
        from = to;
    }
    return KBUS_DONE;
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
        res = KBUS_WAIT; /* records wait on the bus until they are stored */
        goto out;
    }
    size_t n_blocks;
    block *blocks = make_blocks(d.rows, n_good, &n_blocks);
    res = store_blocks(conn, d.rows, blocks, n_blocks, reason);
    free(blocks);
    if (res == KBUS_REJECT) {
        char q[600];
        TLOG_WARN("access records refused by PostgreSQL", "messages=%zu error=%s", n,
                  tlog_quote(q, sizeof(q), reason->msg));
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
    {"tessera_auth_access_blocks_stored_total",
     "Access-log blocks stored (auth.access_blocks rows: one per message's records).",
     &blocks_stored},
    {"tessera_auth_access_record_batches_total",
     "ApiAccessBatch messages stored (replays included).", &batches},
    {"tessera_auth_access_batch_records_total",
     "ApiAccess records in those ApiAccessBatch messages (divided by them: records per batch).",
     &batch_records},
    {"tessera_auth_access_records_dead_lettered_total",
     "Records of an ApiAccessBatch dead-lettered alone (no method, a time out of range, text"
     " that is not UTF-8), their batch's other records stored.",
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
