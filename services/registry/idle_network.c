/* idle_network.c: see idle_network.h. */
#include "idle_network.h"

#include "db_common.h"
#include "libcommon/log.h"
#include "session_sweep.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* This instance's counts, for the metrics. */
static _Atomic unsigned long n_reclaimed, n_pushed;

/* The sessions due, oldest deadline first (the partial index). */
static const char DUE_SQL[] = "SELECT s.id::text, s.idle_timeout FROM registry.sessions s"
                              " WHERE s.idle_deadline IS NOT NULL AND s.idle_deadline < now()"
                              " AND s.status = 'RUNNING'"
                              " ORDER BY s.idle_deadline LIMIT 100";

bool idle_mark_active(const char *session_id, ts_err *err)
{
    rds *r = reg_redis(err);
    if (!r) return false;
    char key[128], now[24];
    snprintf(key, sizeof(key), IDLE_LAST_ACCESS_KEY, session_id);
    snprintf(now, sizeof(now), "%lld", (long long)ts_now_wall_ms());
    const char *argv[] = {"SET", key, now, "EX", "2592000"}; /* as wsproxy: 30 days */
    redisReply *rep = rds_command(r, 5, argv, NULL, err);
    if (!rep) return false;
    bool ok = rep->type != REDIS_REPLY_ERROR;
    if (!ok) ts_err_set(err, "SET %s: %s", key, rep->str);
    freeReplyObject(rep);
    return ok;
}

bool idle_last_access(const char *session_id, int64_t *ms, ts_err *err)
{
    *ms = 0;
    rds *r = reg_redis(err);
    if (!r) return false;
    char key[128];
    snprintf(key, sizeof(key), IDLE_LAST_ACCESS_KEY, session_id);
    const char *argv[] = {"GET", key};
    redisReply *rep = rds_command(r, 2, argv, NULL, err);
    if (!rep) return false;
    bool ok = rep->type != REDIS_REPLY_ERROR;
    if (!ok) ts_err_set(err, "GET %s: %s", key, rep->str);
    if (rep->type == REDIS_REPLY_STRING) *ms = strtoll(rep->str, NULL, 10);
    freeReplyObject(rep);
    return ok;
}

/* One checker's report: seconds from now to end (null when end is 0), extra. */
static json_t *report(int64_t end, int64_t now_ms, json_t *extra)
{
    json_t *remaining = json_null();
    if (end > 0)
        remaining = json_real(end > now_ms ? (double)(end - now_ms) / 1000.0 : 0.0);
    else {
        json_decref(extra);
        extra = json_null();
    }
    return json_pack("{s:o,s:s,s:o}", "remaining", remaining, "remaining_time_type", "expire_after",
                     "extra", extra);
}

json_t *idle_checks_json(const idle_inputs *in)
{
    int64_t net_end = 0;
    if (in->deadline_ms > 0 && in->timeout_s > 0) {
        net_end = in->deadline_ms;
        if (in->last_ms > 0 && in->last_ms + (int64_t)in->timeout_s * 1000 > net_end)
            net_end = in->last_ms + (int64_t)in->timeout_s * 1000;
    }
    int64_t life_end = in->max_lifetime_s > 0 ? in->lifetime_end_ms : 0;
    return json_pack(
        "{s:o,s:o}", "network_timeout",
        report(net_end, in->now_ms,
               json_pack("{s:i,s:s?}", "timeout", in->timeout_s, "level", in->level)),
        "session_lifetime",
        report(life_end, in->now_ms, json_pack("{s:i}", "max_lifetime", in->max_lifetime_s)));
}

void idle_checks_refine(json_t *checks, const char *session_id)
{
    json_t *net = json_object_get(checks, "network_timeout");
    json_t *remaining = json_object_get(net, "remaining");
    int64_t timeout_ms =
        json_integer_value(json_object_get(json_object_get(net, "extra"), "timeout")) * 1000;
    if (!json_is_number(remaining) || timeout_ms <= 0) return;
    int64_t last = 0;
    ts_err err = {{0}};
    if (!idle_last_access(session_id, &last, &err)) {
        TLOG_WARN("idle check: last use unknown", "error=\"%s\"", err.msg);
        return;
    }
    double left = (double)(last + timeout_ms - ts_now_wall_ms()) / 1000.0;
    if (last > 0 && left > json_number_value(remaining))
        json_object_set_new(net, "remaining", json_real(left));
}

static void reason(const PGresult *r, int row, char *buf, size_t size)
{
    snprintf(buf, size, "idle: no app traffic or exec for %s s", PQgetvalue(r, row, 1));
}

/* Under the row lock: still past its deadline with no use since? A use since
 * pushes the deadline instead. */
static bool still_idle(PGconn *conn, sess *s, bool *due, ts_err *err)
{
    *due = false;
    const char *p[] = {s->id};
    PGresult *r =
        reg_exec(conn,
                 "SELECT idle_timeout, (extract(epoch FROM idle_deadline) * 1000)::bigint,"
                 " (extract(epoch FROM now()) * 1000)::bigint FROM registry.sessions"
                 " WHERE id = $1::uuid AND idle_deadline IS NOT NULL",
                 1, p, err);
    if (!r) return false;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return true;
    }
    int64_t timeout_ms = strtoll(PQgetvalue(r, 0, 0), NULL, 10) * 1000;
    int64_t deadline = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    int64_t now = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
    PQclear(r);
    if (deadline > now) return true; /* another instance pushed it meanwhile */
    int64_t last = 0;
    ts_err rerr = {{0}};
    if (!idle_last_access(s->id, &last, &rerr)) {
        /* not measured is not idle: the next sweep asks again */
        TLOG_WARN("idle check: last use unknown", "error=\"%s\"", rerr.msg);
        return true;
    }
    if (last + timeout_ms <= now) {
        *due = true;
        return true;
    }
    char next[24];
    snprintf(next, sizeof(next), "%lld", (long long)(last + timeout_ms));
    const char *u[] = {s->id, next};
    if (!reg_run(conn,
                 "UPDATE registry.sessions SET idle_deadline = to_timestamp($2::bigint / 1000.0)"
                 " WHERE id = $1::uuid AND idle_deadline IS NOT NULL",
                 2, u, err))
        return false;
    atomic_fetch_add(&n_pushed, 1);
    return true;
}

static bool terminate(PGconn *conn, outbox *ob, sess *s, const char *why, ts_err *err)
{
    if (!tr_terminate(conn, ob, s, why, why, "registry", err)) return false;
    /* counted before the COMMIT: a failed COMMIT (rare) overcounts by one */
    atomic_fetch_add(&n_reclaimed, 1);
    return true;
}

static void collect(FILE *out, void *ctx)
{
    (void)ctx;
    static const char reclaimed[] = "tessera_registry_idle_reclaimed_total";
    metrics_family(out, reclaimed, "counter",
                   "sessions this instance terminated as idle, by checker");
    metrics_sample_u64(out, reclaimed, "checker=\"network_timeout\"", atomic_load(&n_reclaimed));
    static const char pushed[] = "tessera_registry_idle_deadlines_pushed_total";
    metrics_family(out, pushed, "counter",
                   "idle deadlines this instance found passed but moved on: the session had "
                   "been used since");
    metrics_sample_u64(out, pushed, NULL, atomic_load(&n_pushed));
}

void idle_network_register_metrics(svc *s)
{
    metrics_add(svc_metrics(s), collect, NULL);
}

bool idle_network_sweep(int *ended)
{
    static const session_sweep_spec spec = {.what = "idle network timeout",
                                            .sql = DUE_SQL,
                                            .status = ST_RUNNING,
                                            .done_msg = "idle session reclaimed",
                                            .reason = reason,
                                            .due = still_idle,
                                            .end = terminate};
    return session_sweep(&spec, ended);
}
