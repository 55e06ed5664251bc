/* usage_live.c: live kernels' latest samples as Backend.AI's live_stat
 * (usage_live.h). */
#include "usage_live.h"

#include "db_common.h"

#include "libcommon/log.h"
#include "libcommon/slots.h"

#include <stdio.h>
#include <stdlib.h>

/* Columns: 0 kernel id, 1 slots, 2 cpu_cores, 3 mem_bytes, 4 mem_peak_bytes,
 * 5 gpu_mem_bytes, 6 interval (s), 7 net rx, 8 net tx (interval), 9 io read,
 * 10 io write (interval), 11 cpu_ms, 12 io read, 13 io write, 14 net rx,
 * 15 net tx (sums over the samples kept), 16 has GPUs. */
static const char live_sql[] =
    "SELECT k.id::text, k.slots::text, x.cpu_cores, x.mem_bytes, x.mem_peak_bytes,"
    " x.gpu_mem_bytes, extract(epoch FROM x.interval_end - x.interval_start),"
    " x.net_rx_bytes, x.net_tx_bytes, x.io_read_bytes, x.io_write_bytes, t.cpu, t.ir, t.iw, t.rx,"
    " t.tx, jsonb_array_length(coalesce(k.devices, '[]'::jsonb)) > 0"
    " FROM registry.kernels k"
    " CROSS JOIN LATERAL (SELECT * FROM registry.usage_samples us WHERE us.kernel_id = k.id"
    "  ORDER BY us.interval_end DESC LIMIT 1) x"
    " CROSS JOIN LATERAL (SELECT sum(cpu_used_ms) AS cpu, sum(io_read_bytes) AS ir,"
    "  sum(io_write_bytes) AS iw, sum(net_rx_bytes) AS rx, sum(net_tx_bytes) AS tx"
    "  FROM registry.usage_samples us WHERE us.kernel_id = k.id) t"
    " WHERE k.session_id = $1::uuid AND k.status NOT IN " SQL_FINAL;

/* One metric: {"current", "capacity", "pct", "unit_hint", "stats.*"}. */
static json_t *metric(double current, double capacity, const char *unit, double max, double sum,
                      double rate)
{
    char cur[40], cap[40], pct[40], mx[40], sm[40], rt[40];
    snprintf(cur, sizeof(cur), "%.17g", current);
    snprintf(cap, sizeof(cap), "%.17g", capacity);
    snprintf(pct, sizeof(pct), "%.2f", capacity > 0 ? current / capacity * 100.0 : 0.0);
    snprintf(mx, sizeof(mx), "%.17g", max);
    snprintf(sm, sizeof(sm), "%.17g", sum);
    snprintf(rt, sizeof(rt), "%.17g", rate);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:n}", "current", cur,
                     "capacity", cap, "pct", pct, "unit_hint", unit, "stats.min", "0", "stats.max",
                     mx, "stats.sum", sm, "stats.avg", cur, "stats.diff", "0", "stats.rate", rt,
                     "stats.version");
}

static double num(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? 0 : strtod(PQgetvalue(r, row, col), NULL);
}

json_t *usage_live_kernels(PGconn *conn, const char *session_id)
{
    const char *p[] = {session_id};
    ts_err err = {{0}};
    PGresult *r = reg_exec(conn, live_sql, 1, p, &err);
    if (!r) {
        TLOG_WARN("live kernel usage unreadable", "error=\"%s\"", err.msg);
        return NULL;
    }
    json_t *out = json_object();
    for (int i = 0; i < PQntuples(r); i++) {
        slots_t sl;
        slots_clear(&sl);
        json_t *j = json_loads(PQgetvalue(r, i, 1), 0, NULL);
        if (!j || !slots_from_json(&sl, j, &err)) slots_clear(&sl);
        json_decref(j);
        double cores = (double)slots_get(&sl, SLOT_CPU) / 1000.0;
        double mem_cap = (double)slots_get(&sl, SLOT_MEM);
        double secs = num(r, i, 6);
        double per = secs > 0 ? 1.0 / secs : 0;
        double cpu_pct = num(r, i, 2) * 100.0;
        json_t *st = json_object();
        json_object_set_new(st, "cpu_util",
                            metric(cpu_pct, cores * 100.0, "percent", cpu_pct, cpu_pct, 0));
        json_object_set_new(st, "cpu_used",
                            metric(num(r, i, 11), 0, "msec", num(r, i, 11), num(r, i, 11), 0));
        json_object_set_new(st, "mem",
                            metric(num(r, i, 3), mem_cap, "bytes", num(r, i, 4), num(r, i, 3), 0));
        json_object_set_new(
            st, "io_read",
            metric(num(r, i, 12), 0, "bytes", num(r, i, 12), num(r, i, 12), num(r, i, 9) * per));
        json_object_set_new(
            st, "io_write",
            metric(num(r, i, 13), 0, "bytes", num(r, i, 13), num(r, i, 13), num(r, i, 10) * per));
        json_object_set_new(st, "net_rx",
                            metric(num(r, i, 7) * per, 0, "bps", num(r, i, 7) * per, num(r, i, 14),
                                   num(r, i, 7) * per));
        json_object_set_new(st, "net_tx",
                            metric(num(r, i, 8) * per, 0, "bps", num(r, i, 8) * per, num(r, i, 15),
                                   num(r, i, 8) * per));
        if (PQgetvalue(r, i, 16)[0] == 't')
            json_object_set_new(st, "cuda_mem",
                                metric(num(r, i, 5), 0, "bytes", num(r, i, 5), num(r, i, 5), 0));
        json_object_set_new(out, PQgetvalue(r, i, 0), st);
    }
    PQclear(r);
    return out;
}
