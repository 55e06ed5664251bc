/* usage_stats.c: the monthly usage series (usage_stats.h). */
#include "usage_stats.h"

#include "caller.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void usage_bins_add(usage_bin *bins, int nbins, double start, double from, double to,
                    const slots_t *slots)
{
    if (to < from) to = from;
    double end = start + (double)nbins * USAGE_BIN_S;
    if (to < start || from >= end) return;
    long first = from < start ? 0 : (long)((from - start) / USAGE_BIN_S);
    long last = (long)((to - start) / USAGE_BIN_S);
    if (last >= nbins) last = nbins - 1;
    int64_t gpu = slots_get(slots, SLOT_CUDA_DEVICE) * SLOT_SHARES_PER_DEVICE +
                  slots_get(slots, SLOT_CUDA_SHARES);
    for (long i = first; i <= last; i++) {
        bins[i].sessions++;
        bins[i].cpu_milli += slots_get(slots, SLOT_CPU);
        bins[i].mem_bytes += slots_get(slots, SLOT_MEM);
        bins[i].gpu_shares += gpu;
    }
}

/* v's part of a span of len s up to offset x: rounded, so that consecutive
 * parts add up. */
static int64_t _upto(int64_t v, double x, double len)
{
    return (int64_t)llround((double)v * x / len);
}

void usage_bins_add_io(usage_bin *bins, int nbins, double start, double hour_s, int64_t read,
                       int64_t write)
{
    /* the hour so far: the current one is spread over what has passed of it */
    double end = start + (double)nbins * USAGE_BIN_S;
    double len = hour_s + 3600 < end ? 3600 : end - hour_s;
    if (len <= 0) return;
    for (long i = (long)floor((hour_s - start) / USAGE_BIN_S); i < nbins; i++) {
        double lo = start + (double)i * USAGE_BIN_S - hour_s, hi = lo + USAGE_BIN_S;
        if (lo >= len) break;
        if (i < 0 || hi <= 0) continue;
        if (lo < 0) lo = 0;
        if (hi > len) hi = len;
        bins[i].io_read_bytes += _upto(read, hi, len) - _upto(read, lo, len);
        bins[i].io_write_bytes += _upto(write, hi, len) - _upto(write, lo, len);
    }
}

/* The block I/O of the hours that overlap the window, summed per hour; $1:
 * a user id, or NULL for everyone's; $2: the window's start, Unix s. */
static const char io_sql[] =
    "SELECT extract(epoch FROM h.hour)::float8, sum(h.io_read_bytes), sum(h.io_write_bytes)"
    " FROM registry.session_usage_hours h JOIN registry.session_usage u"
    " ON u.session_id = h.session_id"
    " WHERE h.hour > to_timestamp($2::float8) - interval '1 hour'"
    " AND ($1::uuid IS NULL OR u.user_id = $1::uuid) GROUP BY 1";

/* The kernels that were placed (held slots) and whose session was live at
 * some time in the window; $1: a user id, or NULL for everyone's. */
static const char kernels_sql[] =
    "SELECT extract(epoch FROM k.created_at)::float8,"
    " extract(epoch FROM coalesce(s.terminated_at, now()))::float8, k.slots::text"
    " FROM registry.kernels k JOIN registry.sessions s ON s.id = k.session_id"
    " WHERE k.agent_id IS NOT NULL AND ($1::uuid IS NULL OR s.user_id = $1::uuid)"
    " AND coalesce(s.terminated_at, now()) >= now() - interval '30 days'";

static json_t *_fig(json_t *value, const char *unit)
{
    return json_pack("{s:o, s:s}", "value", value, "unit_hint", unit);
}

static void _answer(svc *s, http_resp *resp, const char *user_id)
{
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) return;
    double now = (double)ts_now_wall_ms() / 1000.0;
    double start = now - (double)USAGE_BINS * USAGE_BIN_S;
    char from[32];
    snprintf(from, sizeof(from), "%.3f", start);
    const char *p[] = {user_id, from};
    PGresult *io = pgjson_query(conn, resp, "usage hours", io_sql, 2, p);
    PGresult *r = io ? pgjson_query(conn, resp, "usage kernels", kernels_sql, 1, p) : NULL;
    pgjson_put(s, conn);
    if (!r) {
        PQclear(io);
        return;
    }
    usage_bin *bins = ts_calloc(USAGE_BINS, sizeof(*bins));
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *sj = json_loads(PQgetvalue(r, i, 2), 0, NULL);
        slots_t sl;
        ts_err err;
        if (!slots_from_json(&sl, sj, &err)) slots_clear(&sl);
        json_decref(sj);
        usage_bins_add(bins, USAGE_BINS, start, atof(PQgetvalue(r, i, 0)),
                       atof(PQgetvalue(r, i, 1)), &sl);
    }
    int n = PQntuples(r);
    PQclear(r);
    for (int i = 0; i < PQntuples(io); i++)
        usage_bins_add_io(bins, USAGE_BINS, start, atof(PQgetvalue(io, i, 0)),
                          strtoll(PQgetvalue(io, i, 1), NULL, 10),
                          strtoll(PQgetvalue(io, i, 2), NULL, 10));
    PQclear(io);
    json_t *out = json_array();
    for (int i = 0; i < USAGE_BINS; i++) {
        const usage_bin *b = &bins[i];
        json_array_append_new(
            out, json_pack("{s:f, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "date",
                           start + (double)i * USAGE_BIN_S, "num_sessions",
                           _fig(json_integer(b->sessions), "count"), "cpu_allocated",
                           _fig(json_real((double)b->cpu_milli / 1000.0), "count"), "mem_allocated",
                           _fig(json_integer(b->mem_bytes), "bytes"), "gpu_allocated",
                           _fig(json_real((double)b->gpu_shares / SLOT_SHARES_PER_DEVICE), "count"),
                           "io_read_bytes", _fig(json_integer(b->io_read_bytes), "bytes"),
                           "io_write_bytes", _fig(json_integer(b->io_write_bytes), "bytes"),
                           "disk_used", _fig(json_null(), "bytes")));
    }
    free(bins);
    TLOG_DEBUG("usage series", "kernels=%d", n);
    http_reply_json(resp, 200, out);
}

static void h_user_month(http_req *req, http_resp *resp, void *ctx)
{
    ts_caller c;
    if (!caller_get(req, resp, NULL, &c)) return;
    char uid[TS_UUID_STRLEN];
    ts_strlcpy(uid, c.user_id, sizeof(uid));
    caller_free(&c);
    _answer(ctx, resp, uid);
}

static void h_admin_month(http_req *req, http_resp *resp, void *ctx)
{
    reg_req x;
    bool super =
        reg_req_begin(&x, ctx, req, resp, REQ_SUPERADMIN, "only superadmins read everyone's usage");
    reg_req_end(&x);
    if (!super) return;
    _answer(ctx, resp, NULL);
}

void usage_stats_routes(svc *s)
{
    http_route(svc_router(s), "GET", "/v1/resource/stats/user/month", h_user_month, s);
    http_route(svc_router(s), "GET", "/v1/resource/stats/admin/month", h_admin_month, s);
}
