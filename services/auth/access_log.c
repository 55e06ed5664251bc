/* access_log.c: store ApiAccess events. The insert is keyed by the event id,
 * so a replayed event (at-least-once delivery) changes nothing. */
#include "access_log.h"

#include "libcommon/log.h"
#include "tessera/v1/audit.pb-c.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static kbus_consumer *consumer;
static atomic_uint_fast64_t stored, duplicates;

static const char insert_sql[] =
    "INSERT INTO auth.access_log (event_id, occurred_at, access_key, user_id, client_addr,"
    " method, path, status, latency_us, request_id, producer)"
    " VALUES ($1::uuid, to_timestamp($2::bigint / 1000.0), $3, $4, $5, $6, $7, $8::int,"
    " $9::bigint, $10, $11) ON CONFLICT (event_id) DO NOTHING";

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
    for (const char *p = access_key; *p; p++) h = (h ^ (uint8_t)*p) * 16777619u;
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

static kbus_result store(const kbus_msg *msg, void *ctx, ts_err *reason)
{
    svc *s = ctx;
    ProtobufCMessage *m = envelope_payload(msg->env, &tessera__v1__api_access__descriptor, reason);
    if (!m) return KBUS_REJECT;
    Tessera__V1__ApiAccess *a = (Tessera__V1__ApiAccess *)m;
    kbus_result res = KBUS_DONE;
    if (!ts_uuid_valid(msg->env->event_id) || !a->method[0]) {
        ts_err_set(reason, "ApiAccess without a valid event id or method");
        res = KBUS_REJECT;
        goto out;
    }
    char at[24], status[16], latency[24];
    snprintf(at, sizeof(at), "%lld", (long long)a->occurred_at_ms);
    snprintf(status, sizeof(status), "%d", a->status);
    snprintf(latency, sizeof(latency), "%lld", (long long)a->latency_us);
    const char *params[] = {msg->env->event_id, at,      a->access_key, a->user_id, a->client_addr,
                            a->method,          a->path, status,        latency,    a->request_id,
                            msg->env->producer};
    PGconn *conn = pg_pool_get(svc_pg(s), 5000, reason);
    if (!conn) {
        res = KBUS_RETRY;
        goto out;
    }
    PGresult *r = PQexecParams(conn, insert_sql, 11, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        ts_err_set(reason, "insert access_log: %s", PQresultErrorMessage(r));
        /* A constraint or type error will not heal by retrying. */
        const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        res = state && (state[0] == '2' && state[1] == '2') ? KBUS_REJECT : KBUS_RETRY;
    } else if (atoi(PQcmdTuples(r)) == 1) {
        atomic_fetch_add(&stored, 1);
        if (a->access_key && a->access_key[0]) touch_keypair(conn, a->access_key, a->occurred_at_ms);
    } else {
        atomic_fetch_add(&duplicates, 1);
    }
    PQclear(r);
    pg_pool_put(svc_pg(s), conn);
out:
    protobuf_c_message_free_unpacked(m, NULL);
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
}

bool access_log_start(svc *s, ts_err *err)
{
    static const char *const topics[] = {ACCESS_LOG_TOPIC, NULL};
    metrics_add(svc_metrics(s), collect, NULL);
    consumer = kbus_consume(svc_bus(s), ACCESS_LOG_GROUP, topics, store, s, err);
    return consumer != NULL;
}

void access_log_stop(void)
{
    if (consumer) kbus_consumer_stop(consumer);
    consumer = NULL;
}
