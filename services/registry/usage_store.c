/* usage_store.c: the tessera.usage.v1 consumer and the samples' pruning
 * (usage_store.h). */
#include "usage_store.h"

#include "context.h"
#include "db_common.h"
#include "event_consumers.h"
#include "usage_calc.h"
#include "usage_hours.h"

#include "libcommon/log.h"
#include "libcommon/metrics.h"
#include "tessera/v1/usage.pb-c.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static reg_consumers consumers;
static atomic_uint_fast64_t n_stored, n_duplicate, n_unknown, n_pruned;

typedef enum { APPLIED, SKIPPED, INVALID, FAILED } outcome;

static const char session_sql[] =
    "SELECT s.name, s.access_key, s.user_id::text, s.project_id::text, s.group_name,"
    " s.domain_name, s.resource_group, s.image, coalesce(k.devices, '[]'::jsonb)::text"
    " FROM registry.sessions s LEFT JOIN registry.kernels k"
    " ON k.id = $2::uuid AND k.session_id = s.id WHERE s.id = $1::uuid";

static const char sample_sql[] =
    "INSERT INTO registry.usage_samples (event_id, kernel_id, session_id, agent_id,"
    " interval_start, interval_end, cpu_used_ms, cpu_cores, mem_bytes, mem_peak_bytes,"
    " gpu_util_pct, gpu_mem_bytes, net_rx_bytes, net_tx_bytes, gpu_devices, gpu_shares,"
    " io_read_bytes, io_write_bytes, final, gpu_busy_ms)"
    " VALUES ($1::uuid, $2::uuid, $3::uuid, $4, to_timestamp($5::float8 / 1000),"
    " to_timestamp($6::float8 / 1000), $7::bigint, $8::float8, $9::bigint, $10::bigint,"
    " $11::float8, $12::bigint, $13::bigint, $14::bigint, $15::float8, $16::float8,"
    " $17::bigint, $18::bigint, $19::bool, $20::bigint)"
    " ON CONFLICT (event_id) DO NOTHING";

static const char totals_sql[] =
    "INSERT INTO registry.session_usage AS u (session_id, session_name, access_key, user_id,"
    " project_id, group_name, domain_name, resource_group, image, cpu_ms, mem_byte_s,"
    " mem_peak_bytes, gpu_device_s, gpu_share_s, gpu_mem_peak_bytes, net_rx_bytes,"
    " net_tx_bytes, samples, first_sample_at, last_sample_at, io_read_bytes, io_write_bytes,"
    " gpu_busy_ms)"
    " VALUES ($1::uuid, $2, $3, $4::uuid, $5::uuid, $6, $7, $8, $9, $10::bigint, $11::float8,"
    " $12::bigint, $13::float8, $14::float8, $15::bigint, $16::bigint, $17::bigint, 1,"
    " to_timestamp($18::float8 / 1000), to_timestamp($19::float8 / 1000), $20::bigint,"
    " $21::bigint, $22::bigint)"
    " ON CONFLICT (session_id) DO UPDATE SET cpu_ms = u.cpu_ms + EXCLUDED.cpu_ms,"
    " mem_byte_s = u.mem_byte_s + EXCLUDED.mem_byte_s,"
    " mem_peak_bytes = greatest(u.mem_peak_bytes, EXCLUDED.mem_peak_bytes),"
    " gpu_device_s = u.gpu_device_s + EXCLUDED.gpu_device_s,"
    " gpu_share_s = u.gpu_share_s + EXCLUDED.gpu_share_s,"
    " gpu_mem_peak_bytes = greatest(u.gpu_mem_peak_bytes, EXCLUDED.gpu_mem_peak_bytes),"
    " net_rx_bytes = u.net_rx_bytes + EXCLUDED.net_rx_bytes,"
    " net_tx_bytes = u.net_tx_bytes + EXCLUDED.net_tx_bytes, samples = u.samples + 1,"
    " io_read_bytes = u.io_read_bytes + EXCLUDED.io_read_bytes,"
    " io_write_bytes = u.io_write_bytes + EXCLUDED.io_write_bytes,"
    " gpu_busy_ms = u.gpu_busy_ms + EXCLUDED.gpu_busy_ms,"
    " first_sample_at = least(u.first_sample_at, EXCLUDED.first_sample_at),"
    " last_sample_at = greatest(u.last_sample_at, EXCLUDED.last_sample_at),"
    " session_name = EXCLUDED.session_name, updated_at = now()";

#define I64(buf, v) (snprintf(buf, sizeof(buf), "%" PRId64, (int64_t)(v)), buf)
#define F64(buf, v) (snprintf(buf, sizeof(buf), "%.17g", (double)(v)), buf)

static outcome store(PGconn *conn, const char *event_id, const Tessera__V1__KernelUsage *m,
                     ts_err *reason)
{
    usage_sample s = {.start_ms = m->interval_start_ms,
                      .end_ms = m->interval_end_ms,
                      .cpu_used_ms = m->cpu_used_ms,
                      .mem_bytes = m->mem_bytes,
                      .mem_peak_bytes = m->mem_peak_bytes,
                      .gpu_mem_bytes = m->gpu_mem_bytes,
                      .gpu_mem_peak_bytes = m->gpu_mem_peak_bytes,
                      .gpu_busy_ms = m->gpu_busy_ms,
                      .net_rx_bytes = m->net_rx_bytes,
                      .net_tx_bytes = m->net_tx_bytes,
                      .io_read_bytes = m->io_read_bytes,
                      .io_write_bytes = m->io_write_bytes};
    if (!usage_sample_check(&s, reason)) return INVALID;
    const char *sp[] = {m->session_id, m->kernel_id};
    PGresult *r = reg_exec(conn, session_sql, 2, sp, reason);
    if (!r) return FAILED;
    if (PQntuples(r) != 1) {
        PQclear(r);
        atomic_fetch_add(&n_unknown, 1);
        TLOG_WARN("usage of an unknown session skipped", "event=%s", event_id);
        return SKIPPED;
    }
    json_t *dev = json_loads(PQgetvalue(r, 0, 8), 0, NULL);
    usage_alloc a;
    usage_alloc_from_devices(dev, &a);
    json_decref(dev);
    usage_totals t;
    memset(&t, 0, sizeof(t));
    usage_totals_add(&t, &s, &a);

    char b[19][32];
    const char *ip[] = {event_id,
                        m->kernel_id,
                        m->session_id,
                        m->agent_id,
                        I64(b[0], s.start_ms),
                        I64(b[1], s.end_ms),
                        I64(b[2], s.cpu_used_ms),
                        F64(b[3], m->cpu_cores),
                        I64(b[4], s.mem_bytes),
                        I64(b[5], s.mem_peak_bytes),
                        F64(b[6], m->gpu_util_pct),
                        I64(b[7], s.gpu_mem_bytes),
                        I64(b[8], s.net_rx_bytes),
                        I64(b[9], s.net_tx_bytes),
                        F64(b[10], a.gpu_devices),
                        F64(b[11], a.gpu_shares),
                        I64(b[12], s.io_read_bytes),
                        I64(b[13], s.io_write_bytes),
                        m->final ? "true" : "false",
                        I64(b[14], s.gpu_busy_ms)};
    PGresult *ins = reg_exec(conn, sample_sql, 20, ip, reason);
    if (!ins) {
        PQclear(r);
        return FAILED;
    }
    bool fresh = strcmp(PQcmdTuples(ins), "1") == 0;
    PQclear(ins);
    if (!fresh) { /* delivered again: already counted */
        PQclear(r);
        atomic_fetch_add(&n_duplicate, 1);
        TLOG_DEBUG("usage sample already stored", "event=%s", event_id);
        return APPLIED;
    }
    char c[13][32];
    const char *pid = PQgetisnull(r, 0, 3) ? NULL : PQgetvalue(r, 0, 3);
    const char *tp[] = {m->session_id,
                        PQgetvalue(r, 0, 0),
                        PQgetvalue(r, 0, 1),
                        PQgetvalue(r, 0, 2),
                        pid,
                        PQgetvalue(r, 0, 4),
                        PQgetvalue(r, 0, 5),
                        PQgetvalue(r, 0, 6),
                        PQgetvalue(r, 0, 7),
                        I64(c[0], t.cpu_ms),
                        F64(c[1], t.mem_byte_s),
                        I64(c[2], t.mem_peak_bytes),
                        F64(c[3], t.gpu_device_s),
                        F64(c[4], t.gpu_share_s),
                        I64(c[5], t.gpu_mem_peak_bytes),
                        I64(c[6], t.net_rx_bytes),
                        I64(c[7], t.net_tx_bytes),
                        I64(c[8], t.first_ms),
                        I64(c[9], t.last_ms),
                        I64(c[10], t.io_read_bytes),
                        I64(c[11], t.io_write_bytes),
                        I64(c[12], t.gpu_busy_ms)};
    bool ok = reg_run(conn, totals_sql, 22, tp, reason);
    PQclear(r);
    if (!ok) return FAILED;
    /* and to the hours in which it was measured */
    usage_hour hours[USAGE_MAX_SAMPLE_HOURS];
    size_t nh = usage_split_sample(&s, &a, hours);
    if (!usage_hours_add(conn, m->session_id, hours, nh, reason)) return FAILED;
    atomic_fetch_add(&n_stored, 1);
    return APPLIED;
}

/* One message: anything but a KernelUsage is not ours (APPLIED: nothing to do). */
static outcome on_message(PGconn *conn, const kbus_msg *msg, ts_err *reason)
{
    if (strcmp(msg->env->type, "tessera.v1.KernelUsage") != 0) return APPLIED;
    if (!ts_uuid_valid(msg->env->event_id)) {
        ts_err_set(reason, "event id '%.60s' is not a UUID", msg->env->event_id);
        return INVALID;
    }
    Tessera__V1__KernelUsage *m = (Tessera__V1__KernelUsage *)envelope_payload(
        msg->env, &tessera__v1__kernel_usage__descriptor, reason);
    if (!m) return INVALID;
    outcome o;
    if (!ts_uuid_valid(m->session_id) || !ts_uuid_valid(m->kernel_id)) {
        ts_err_set(reason, "session id '%.60s' or kernel id '%.60s' is not a UUID", m->session_id,
                   m->kernel_id);
        o = INVALID;
    } else {
        tlog_ctx_session(m->session_id);
        tlog_ctx_kernel(m->kernel_id);
        o = store(conn, msg->env->event_id, m, reason);
        tlog_ctx_session(NULL);
        tlog_ctx_kernel(NULL);
    }
    protobuf_c_message_free_unpacked(&m->base, NULL);
    return o;
}

/* The batch in one transaction. A bad message fails the batch (KBUS_REJECT):
 * kbus then hands each message alone, the bad one goes to the DLQ. */
static kbus_result on_batch(const kbus_msg *msgs, size_t n, void *ctx, ts_err *reason)
{
    (void)ctx;
    PGconn *conn = reg_pg_get(reason);
    if (!conn) return KBUS_RETRY;
    kbus_result res = KBUS_DONE;
    if (!pg_begin(conn, reason)) {
        res = KBUS_RETRY;
    } else {
        for (size_t i = 0; i < n && res == KBUS_DONE; i++) {
            outcome o = on_message(conn, &msgs[i], reason);
            if (o == INVALID) {
                TLOG_WARN("usage sample refused", "event=%s reason=\"%s\"", msgs[i].env->event_id,
                          reason->msg);
                res = KBUS_REJECT;
            } else if (o == FAILED) {
                res = KBUS_RETRY;
            }
        }
        if (res == KBUS_DONE && !pg_commit(conn, reason)) res = KBUS_RETRY;
        if (res != KBUS_DONE) pg_rollback(conn);
    }
    reg_pg_put(conn);
    return res;
}

static const char phases_sql[] =
    "INSERT INTO registry.session_usage AS u (session_id, session_name, access_key, user_id,"
    " project_id, group_name, domain_name, resource_group, image, first_sample_at,"
    " last_sample_at, pending_s, preparing_s, running_s, terminating_s, other_s, ended_at)"
    " SELECT s.id, s.name, s.access_key, s.user_id, s.project_id, s.group_name, s.domain_name,"
    " s.resource_group, s.image, s.created_at, now(), $2::float8, $3::float8, $4::float8,"
    " $5::float8, $6::float8, now() FROM registry.sessions s WHERE s.id = $1::uuid"
    " ON CONFLICT (session_id) DO UPDATE SET pending_s = EXCLUDED.pending_s,"
    " preparing_s = EXCLUDED.preparing_s, running_s = EXCLUDED.running_s,"
    " terminating_s = EXCLUDED.terminating_s, other_s = EXCLUDED.other_s,"
    " ended_at = EXCLUDED.ended_at, updated_at = now()";

bool usage_store_session_end(PGconn *conn, const char *session_id, ts_err *err)
{
    const char *p[] = {session_id};
    PGresult *r = reg_exec(conn,
                           "SELECT status, (extract(epoch FROM at) * 1000)::bigint"
                           " FROM registry.session_status_history WHERE session_id = $1::uuid"
                           " ORDER BY id",
                           1, p, err);
    if (!r) return false;
    int n = PQntuples(r);
    usage_status_change *h = ts_calloc((size_t)n + 1, sizeof(*h));
    for (int i = 0; i < n; i++) {
        h[i].status = PQgetvalue(r, i, 0);
        h[i].at_ms = strtoll(PQgetvalue(r, i, 1), NULL, 10);
    }
    double ph[USAGE_N_PHASES];
    usage_status_seconds(h, (size_t)n, ph);
    usage_hour *hours;
    size_t nh = usage_status_hours(h, (size_t)n, &hours);
    free(h);
    PQclear(r);
    char b[USAGE_N_PHASES][32];
    const char *q[] = {session_id,       F64(b[0], ph[0]), F64(b[1], ph[1]),
                       F64(b[2], ph[2]), F64(b[3], ph[3]), F64(b[4], ph[4])};
    bool ok = reg_run(conn, phases_sql, 6, q, err) &&
              usage_hours_set_phases(conn, session_id, hours, nh, err);
    free(hours);
    return ok;
}

long usage_store_prune(void)
{
    ts_err err = {{0}};
    PGconn *conn = reg_pg_get(&err);
    if (!conn) return -1;
    char ms[32];
    const char *p[] = {I64(ms, reg_settings.usage_sample_retention_ms)};
    PGresult *r = reg_exec(conn,
                           "DELETE FROM registry.usage_samples WHERE event_id IN"
                           " (SELECT event_id FROM registry.usage_samples WHERE interval_end"
                           " < now() - $1::bigint * interval '1 millisecond' LIMIT 10000)",
                           1, p, &err);
    reg_pg_put(conn);
    if (!r) {
        TLOG_WARN("usage samples not pruned", "error=\"%s\"", err.msg);
        return -1;
    }
    long n = strtol(PQcmdTuples(r), NULL, 10);
    PQclear(r);
    if (n > 0) {
        atomic_fetch_add(&n_pruned, (uint64_t)n);
        TLOG_INFO("usage samples pruned", "count=%ld", n);
    }
    return n;
}

static void collect(FILE *out, void *ctx)
{
    (void)ctx;
    static const char name[] = "tessera_registry_usage_samples_total";
    metrics_family(out, name, "counter",
                   "KernelUsage samples consumed: result=\"stored\" (added to the session's "
                   "totals), \"duplicate\" (delivered again, already counted), "
                   "\"unknown_session\" (skipped), \"pruned\" (deleted past the retention)");
    metrics_sample_u64(out, name, "result=\"stored\"", atomic_load(&n_stored));
    metrics_sample_u64(out, name, "result=\"duplicate\"", atomic_load(&n_duplicate));
    metrics_sample_u64(out, name, "result=\"unknown_session\"", atomic_load(&n_unknown));
    metrics_sample_u64(out, name, "result=\"pruned\"", atomic_load(&n_pruned));
}

bool usage_store_start(svc *s, ts_err *err)
{
    static const char *const topics[] = {TOPIC_USAGE, NULL};
    /* not on the control path: nobody waits on a sample */
    kbus_batch_opts opts = {.max_messages = 500, .max_wait_ms = 200};
    if (!reg_consumers_start_batch(&consumers, s, "tessera-registry.usage", topics, &opts, on_batch,
                                   err))
        return false;
    svc_add_check(s, "usage-events", reg_consumers_check, &consumers);
    metrics_add(svc_metrics(s), collect, NULL);
    return true;
}

void usage_store_stop(void)
{
    reg_consumers_stop(&consumers);
}
