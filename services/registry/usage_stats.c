/* usage_stats.c: the monthly usage series (usage_stats.h). */
#include "usage_stats.h"

#include "caller.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"

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
    const char *p[] = {user_id};
    PGresult *r = pgjson_query(conn, resp, "usage kernels", kernels_sql, 1, p);
    pgjson_put(s, conn);
    if (!r) return;
    double now = (double)ts_now_wall_ms() / 1000.0;
    double start = now - (double)USAGE_BINS * USAGE_BIN_S;
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
                           "io_read_bytes", _fig(json_null(), "bytes"), "io_write_bytes",
                           _fig(json_null(), "bytes"), "disk_used", _fig(json_null(), "bytes")));
    }
    free(bins);
    TLOG_DEBUG("usage series", "kernels=%d", n);
    http_reply_json(resp, 200, out);
}

static void h_user_month(http_req *req, http_resp *resp, void *ctx)
{
    reg_caller c;
    if (!caller_get(req, resp, NULL, &c)) return;
    char uid[TS_UUID_STRLEN];
    ts_strlcpy(uid, c.user_id, sizeof(uid));
    caller_free(&c);
    _answer(ctx, resp, uid);
}

static void h_admin_month(http_req *req, http_resp *resp, void *ctx)
{
    reg_caller c;
    if (!caller_get(req, resp, NULL, &c)) return;
    bool super = caller_is_superadmin(&c);
    caller_free(&c);
    if (!super) {
        http_problem(resp, 403, "forbidden", NULL, "only superadmins read everyone's usage");
        return;
    }
    _answer(ctx, resp, NULL);
}

void usage_stats_routes(svc *s)
{
    http_route(svc_router(s), "GET", "/v1/resource/stats/user/month", h_user_month, s);
    http_route(svc_router(s), "GET", "/v1/resource/stats/admin/month", h_admin_month, s);
}
