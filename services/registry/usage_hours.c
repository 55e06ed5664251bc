/* usage_hours.c: see usage_hours.h. */
#include "usage_hours.h"

#include "db_common.h"

#include "libcommon/buf.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* One column of usage_hour, as an array parameter: its place in the hour's
 * totals, and whether it is a double. */
typedef struct hour_col {
    size_t off;
    bool real;
} hour_col;

#define I64_COL(f)                                                                                 \
    {                                                                                              \
        offsetof(usage_totals, f), false                                                           \
    }
#define F64_COL(f)                                                                                 \
    {                                                                                              \
        offsetof(usage_totals, f), true                                                            \
    }
#define PHASE_COL(i)                                                                               \
    {                                                                                              \
        offsetof(usage_totals, phase_s) + (i) * sizeof(double), true                               \
    }

/* The figures, in the order of add_sql's arrays $3.. */
static const hour_col figures[] = {
    I64_COL(cpu_ms),        F64_COL(mem_byte_s),     I64_COL(mem_peak_bytes),
    F64_COL(gpu_device_s),  F64_COL(gpu_share_s),    I64_COL(gpu_mem_peak_bytes),
    I64_COL(gpu_busy_ms),   I64_COL(net_rx_bytes),   I64_COL(net_tx_bytes),
    I64_COL(io_read_bytes), I64_COL(io_write_bytes), I64_COL(samples),
};

static const char add_sql[] =
    "INSERT INTO registry.session_usage_hours AS x (session_id, hour, cpu_ms, mem_byte_s,"
    " mem_peak_bytes, gpu_device_s, gpu_share_s, gpu_mem_peak_bytes, gpu_busy_ms, net_rx_bytes,"
    " net_tx_bytes, io_read_bytes, io_write_bytes, samples)"
    " SELECT $1::uuid, to_timestamp(t.h / 1000), t.c, t.m, t.mp, t.gd, t.gs, t.gp, t.gb, t.rx,"
    " t.tx, t.ir, t.iw, t.n FROM unnest($2::bigint[], $3::bigint[], $4::float8[],"
    " $5::bigint[], $6::float8[], $7::float8[], $8::bigint[], $9::bigint[], $10::bigint[],"
    " $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[])"
    " AS t(h, c, m, mp, gd, gs, gp, gb, rx, tx, ir, iw, n)"
    " ON CONFLICT (session_id, hour) DO UPDATE SET cpu_ms = x.cpu_ms + EXCLUDED.cpu_ms,"
    " mem_byte_s = x.mem_byte_s + EXCLUDED.mem_byte_s,"
    " mem_peak_bytes = greatest(x.mem_peak_bytes, EXCLUDED.mem_peak_bytes),"
    " gpu_device_s = x.gpu_device_s + EXCLUDED.gpu_device_s,"
    " gpu_share_s = x.gpu_share_s + EXCLUDED.gpu_share_s,"
    " gpu_mem_peak_bytes = greatest(x.gpu_mem_peak_bytes, EXCLUDED.gpu_mem_peak_bytes),"
    " gpu_busy_ms = x.gpu_busy_ms + EXCLUDED.gpu_busy_ms,"
    " net_rx_bytes = x.net_rx_bytes + EXCLUDED.net_rx_bytes,"
    " net_tx_bytes = x.net_tx_bytes + EXCLUDED.net_tx_bytes,"
    " io_read_bytes = x.io_read_bytes + EXCLUDED.io_read_bytes,"
    " io_write_bytes = x.io_write_bytes + EXCLUDED.io_write_bytes,"
    " samples = x.samples + EXCLUDED.samples";

static const hour_col phases[] = {PHASE_COL(0), PHASE_COL(1), PHASE_COL(2), PHASE_COL(3),
                                  PHASE_COL(4)};

static const char phases_sql[] =
    "INSERT INTO registry.session_usage_hours AS x (session_id, hour, pending_s, preparing_s,"
    " running_s, terminating_s, other_s)"
    " SELECT $1::uuid, to_timestamp(t.h / 1000), t.pe, t.pr, t.ru, t.te, t.ot"
    " FROM unnest($2::bigint[], $3::float8[], $4::float8[], $5::float8[], $6::float8[],"
    " $7::float8[]) AS t(h, pe, pr, ru, te, ot)"
    " ON CONFLICT (session_id, hour) DO UPDATE SET pending_s = EXCLUDED.pending_s,"
    " preparing_s = EXCLUDED.preparing_s, running_s = EXCLUDED.running_s,"
    " terminating_s = EXCLUDED.terminating_s, other_s = EXCLUDED.other_s";

/* An array literal of column col of the n hours ("{1,2}"); col NULL: their
 * starts. */
static char *array_of(const usage_hour *h, size_t n, const hour_col *col)
{
    ts_buf b = {0};
    ts_buf_append(&b, "{", 1);
    for (size_t i = 0; i < n; i++) {
        char v[40];
        const char *base = (const char *)&h[i].t;
        if (!col)
            snprintf(v, sizeof(v), "%lld", (long long)h[i].hour_ms);
        else if (col->real)
            snprintf(v, sizeof(v), "%.17g", *(const double *)(const void *)(base + col->off));
        else
            snprintf(v, sizeof(v), "%lld",
                     (long long)*(const int64_t *)(const void *)(base + col->off));
        if (i) ts_buf_append(&b, ",", 1);
        ts_buf_append_str(&b, v);
    }
    ts_buf_append(&b, "}", 1);
    return ts_buf_steal(&b, NULL);
}

/* sql with $1 the session and $2.. the hours' starts and the ncols columns. */
static bool run(PGconn *conn, const char *sql, const char *session_id, const usage_hour *h,
                size_t n, const hour_col *cols, size_t ncols, ts_err *err)
{
    if (n == 0) return true;
    char *arrays[16];
    const char *p[18];
    p[0] = session_id;
    for (size_t i = 0; i <= ncols; i++)
        p[i + 1] = arrays[i] = array_of(h, n, i ? &cols[i - 1] : NULL);
    bool ok = reg_run(conn, sql, (int)ncols + 2, p, err);
    for (size_t i = 0; i <= ncols; i++)
        free(arrays[i]);
    return ok;
}

bool usage_hours_add(PGconn *conn, const char *session_id, const usage_hour *h, size_t n,
                     ts_err *err)
{
    return run(conn, add_sql, session_id, h, n, figures, TS_ARRAY_LEN(figures), err);
}

bool usage_hours_set_phases(PGconn *conn, const char *session_id, const usage_hour *h, size_t n,
                            ts_err *err)
{
    return run(conn, phases_sql, session_id, h, n, phases, TS_ARRAY_LEN(phases), err);
}
