/* usage_api.c: GET /v1/usage and the live figures (usage_api.h). */
#include "usage_api.h"

#include "db_common.h"
#include "usage_calc.h"
#include "usage_hours.h"
#include "usage_live.h"

#include "libcommon/buf.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DAY_MS USAGE_DAY_MS

void usage_scope_of(const ts_caller *c, usage_scope *out)
{
    out->user_id[0] = out->domain[0] = 0;
    out->hidden = caller_hidden_users(c);
    if (caller_is_superadmin(c)) return;
    if (caller_is_admin(c))
        ts_strlcpy(out->domain, c->domain_name, sizeof(out->domain));
    else
        ts_strlcpy(out->user_id, c->user_id, sizeof(out->user_id));
}

void usage_scope_free(usage_scope *sc)
{
    free(sc->hidden);
    sc->hidden = NULL;
}

/* The key column of each usage_group, and its display name. */
static const struct {
    const char *key, *name;
} group_cols[] = {
    [USAGE_BY_USER] = {"u.user_id::text", "u.access_key"},
    [USAGE_BY_PROJECT] = {"coalesce(u.project_id::text, '')", "u.group_name"},
    [USAGE_BY_DOMAIN] = {"u.domain_name", "u.domain_name"},
    [USAGE_BY_RESOURCE_GROUP] = {"u.resource_group", "u.resource_group"},
    [USAGE_BY_IMAGE] = {"u.image", "u.image"},
};

/* What GET /v1/usage?bucket= splits a period into: its name, length, the
 * longest period it splits and the key of the list in each item. */
typedef struct bucket_kind {
    const char *name;
    int64_t ms;
    size_t max;
    const char *list;
} bucket_kind;

static const bucket_kind bucket_kinds[] = {
    {.name = "day", .ms = USAGE_DAY_MS, .max = USAGE_MAX_BUCKET_DAYS, .list = "days"},
    {.name = "hour", .ms = USAGE_HOUR_MS, .max = USAGE_MAX_BUCKET_HOURS, .list = "hours"},
};

/* One group's sums, in all and per bucket. */
typedef struct bucket_sum {
    long sessions;
    usage_totals t;
} bucket_sum;

typedef struct group_sum {
    char *key, *name;
    bucket_sum all;
    bucket_sum *buckets; /* nbuckets of them with a bucket, else NULL */
} group_sum;

static void sum_add(bucket_sum *g, const usage_totals *part)
{
    g->t.cpu_ms += part->cpu_ms;
    g->t.mem_byte_s += part->mem_byte_s;
    if (part->mem_peak_bytes > g->t.mem_peak_bytes) g->t.mem_peak_bytes = part->mem_peak_bytes;
    if (part->gpu_mem_peak_bytes > g->t.gpu_mem_peak_bytes)
        g->t.gpu_mem_peak_bytes = part->gpu_mem_peak_bytes;
    g->t.gpu_device_s += part->gpu_device_s;
    g->t.gpu_share_s += part->gpu_share_s;
    g->t.gpu_busy_ms += part->gpu_busy_ms;
    g->t.net_rx_bytes += part->net_rx_bytes;
    g->t.net_tx_bytes += part->net_tx_bytes;
    g->t.io_read_bytes += part->io_read_bytes;
    g->t.io_write_bytes += part->io_write_bytes;
    for (int i = 0; i < USAGE_N_PHASES; i++)
        g->t.phase_s[i] += part->phase_s[i];
    g->t.samples += part->samples;
}

void usage_row_totals(const PGresult *r, int row, int col, usage_totals *t)
{
#define V(i) PQgetvalue(r, row, col + (i))
    t->cpu_ms = strtoll(V(0), NULL, 10);
    t->mem_byte_s = strtod(V(1), NULL);
    t->mem_peak_bytes = strtoll(V(2), NULL, 10);
    t->gpu_device_s = strtod(V(3), NULL);
    t->gpu_share_s = strtod(V(4), NULL);
    t->gpu_mem_peak_bytes = strtoll(V(5), NULL, 10);
    t->net_rx_bytes = strtoll(V(6), NULL, 10);
    t->net_tx_bytes = strtoll(V(7), NULL, 10);
    t->samples = strtoll(V(8), NULL, 10);
    t->first_ms = strtoll(V(9), NULL, 10);
    t->last_ms = strtoll(V(10), NULL, 10);
    t->io_read_bytes = strtoll(V(11), NULL, 10);
    t->io_write_bytes = strtoll(V(12), NULL, 10);
    for (int i = 0; i < USAGE_N_PHASES; i++)
        t->phase_s[i] = strtod(V(13 + i), NULL);
    t->gpu_busy_ms = strtoll(V(13 + USAGE_N_PHASES), NULL, 10);
#undef V
}

static double wall_s(const usage_totals *t)
{
    double w = 0;
    for (int i = 0; i < USAGE_N_PHASES; i++)
        w += t->phase_s[i];
    return w;
}

json_t *usage_totals_json(const usage_totals *t)
{
    json_t *o =
        json_pack("{s:f, s:f, s:I, s:f, s:f, s:f, s:I, s:I, s:I, s:I}", "cpu_seconds",
                  (double)t->cpu_ms / 1000.0, "mem_byte_seconds", t->mem_byte_s, "mem_peak_bytes",
                  (json_int_t)t->mem_peak_bytes, "gpu_device_seconds", t->gpu_device_s,
                  "gpu_share_seconds", t->gpu_share_s, "gpu_hours",
                  (t->gpu_device_s + t->gpu_share_s) / 3600.0, "gpu_mem_peak_bytes",
                  (json_int_t)t->gpu_mem_peak_bytes, "net_rx_bytes", (json_int_t)t->net_rx_bytes,
                  "net_tx_bytes", (json_int_t)t->net_tx_bytes, "samples", (json_int_t)t->samples);
    json_object_set_new(o, "io_read_bytes", json_integer(t->io_read_bytes));
    json_object_set_new(o, "io_write_bytes", json_integer(t->io_write_bytes));
    json_object_set_new(o, "gpu_busy_seconds", json_real((double)t->gpu_busy_ms / 1000.0));
    for (int i = 0; i < USAGE_N_PHASES; i++) {
        char k[32];
        snprintf(k, sizeof(k), "%s_seconds", usage_phase_name((usage_phase)i));
        json_object_set_new(o, k, json_real(t->phase_s[i]));
    }
    json_object_set_new(o, "wall_seconds", json_real(wall_s(t)));
    return o;
}

/* A CSV field: quoted when it holds a comma, quote or line break. */
static void csv_field(ts_buf *b, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        ts_buf_append_str(b, s);
        return;
    }
    ts_buf_append(b, "\"", 1);
    for (; *s; s++) {
        if (*s == '"') ts_buf_append(b, "\"", 1);
        ts_buf_append(b, s, 1);
    }
    ts_buf_append(b, "\"", 1);
}

/* One CSV line: [bucket,]key,name,sessions,totals. */
static void csv_line(ts_buf *b, const char *day, const group_sum *g, const bucket_sum *d)
{
    if (day) {
        ts_buf_append_str(b, day);
        ts_buf_append(b, ",", 1);
    }
    csv_field(b, g->key);
    ts_buf_append(b, ",", 1);
    csv_field(b, g->name);
    const usage_totals *t = &d->t;
    char line[512];
    snprintf(line, sizeof(line),
             ",%ld,%.3f,%.0f,%" PRId64 ",%.3f,%.3f,%.6f,%" PRId64 ",%" PRId64 ",%" PRId64
             ",%" PRId64 "\r\n",
             d->sessions, (double)t->cpu_ms / 1000.0, t->mem_byte_s, t->mem_peak_bytes,
             t->gpu_device_s, t->gpu_share_s, (t->gpu_device_s + t->gpu_share_s) / 3600.0,
             t->gpu_mem_peak_bytes, t->net_rx_bytes, t->net_tx_bytes, t->samples);
    ts_buf_append(b, line, strlen(line) - 2); /* without its \r\n */
    snprintf(line, sizeof(line), ",%" PRId64 ",%" PRId64 ",%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\r\n",
             t->io_read_bytes, t->io_write_bytes, t->phase_s[0], t->phase_s[1], t->phase_s[2],
             t->phase_s[3], t->phase_s[4], wall_s(t), (double)t->gpu_busy_ms / 1000.0);
    ts_buf_append_str(b, line);
}

static char *iso_day(int64_t ms, char *buf, size_t size)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%d", &tm);
    return buf;
}

/* A bucket's name: the day (YYYY-MM-DD) or the hour (YYYY-MM-DDTHH:00:00Z). */
static char *bucket_label(const bucket_kind *k, int64_t ms, char *buf, size_t size)
{
    if (k->ms == USAGE_DAY_MS) return iso_day(ms, buf, size);
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:00:00Z", &tm);
    return buf;
}

/* CSV: one line per group, or with a bucket one per bucket and group that
 * has figures in it, the bucket first. */
static void reply_csv(http_resp *resp, usage_group by, const group_sum *g, size_t n, int64_t from,
                      const bucket_kind *k, size_t nb)
{
    ts_buf b = {0};
    if (k) {
        ts_buf_append_str(&b, k->name);
        ts_buf_append(&b, ",", 1);
    }
    ts_buf_append_str(&b, usage_group_name(by));
    ts_buf_append_str(&b, ",name,sessions,cpu_seconds,mem_byte_seconds,mem_peak_bytes,"
                          "gpu_device_seconds,gpu_share_seconds,gpu_hours,gpu_mem_peak_bytes,"
                          "net_rx_bytes,net_tx_bytes,samples,io_read_bytes,io_write_bytes,"
                          "pending_seconds,preparing_seconds,running_seconds,"
                          "terminating_seconds,other_seconds,wall_seconds,gpu_busy_seconds\r\n");
    if (!k)
        for (size_t i = 0; i < n; i++)
            csv_line(&b, NULL, &g[i], &g[i].all);
    for (size_t d = 0; k && d < nb; d++) {
        char label[32];
        bucket_label(k, from + (int64_t)d * k->ms, label, sizeof(label));
        for (size_t i = 0; i < n; i++)
            if (g[i].buckets[d].sessions) csv_line(&b, label, &g[i], &g[i].buckets[d]);
    }
    http_set_header(resp, "Content-Disposition", "attachment; filename=\"usage.csv\"");
    http_reply(resp, 200, "text/csv; charset=utf-8", b.data ? b.data : "", b.len);
    ts_buf_free(&b);
}

/* ?start=&end= as [from, to) in Unix ms; false after a 400. */
bool usage_period_arg(http_req *req, http_resp *resp, const char *start_name, const char *end_name,
                      int64_t *from, int64_t *to)
{
    const char *start = http_query_arg(req, start_name), *end = http_query_arg(req, end_name);
    int64_t now = ts_now_wall_ms(), today = now - now % DAY_MS;
    ts_err err;
    if (end && *end) {
        if (!usage_parse_day(end, to, &err)) {
            http_problem(resp, 400, "invalid-api-params", NULL, "%s: %s", end_name, err.msg);
            return false;
        }
    } else {
        *to = today;
    }
    if (start && *start) {
        if (!usage_parse_day(start, from, &err)) {
            http_problem(resp, 400, "invalid-api-params", NULL, "%s: %s", start_name, err.msg);
            return false;
        }
    } else {
        /* the first of the end's month */
        time_t t = (time_t)(*to / 1000);
        struct tm tm;
        gmtime_r(&t, &tm);
        *from = *to - (int64_t)(tm.tm_mday - 1) * DAY_MS;
    }
    if (*to < *from) {
        http_problem(resp, 400, "invalid-api-params", NULL, "%s is before %s", end_name,
                     start_name);
        return false;
    }
    *to += DAY_MS; /* the end day included */
    return true;
}

/* [{<bucket>, "sessions", <usage_totals_json>}] of the buckets with figures. */
static json_t *buckets_json(const bucket_kind *k, const bucket_sum *bs, int64_t from, size_t nb)
{
    json_t *a = json_array();
    for (size_t d = 0; d < nb; d++) {
        if (!bs[d].sessions) continue;
        char label[32];
        json_t *o = usage_totals_json(&bs[d].t);
        json_object_set_new(
            o, k->name,
            json_string(bucket_label(k, from + (int64_t)d * k->ms, label, sizeof(label))));
        json_object_set_new(o, "sessions", json_integer(bs[d].sessions));
        json_array_append_new(a, o);
    }
    return a;
}

/* ?bucket=: *k NULL for none; false after a 400 (unknown, or a period too
 * long for it). */
static bool bucket_arg(http_req *req, http_resp *resp, int64_t from, int64_t to,
                       const bucket_kind **k, size_t *nb)
{
    const char *bucket = http_query_arg(req, "bucket");
    *k = NULL;
    *nb = 0;
    if (!bucket || !*bucket) return true;
    for (size_t i = 0; i < TS_ARRAY_LEN(bucket_kinds); i++)
        if (strcmp(bucket, bucket_kinds[i].name) == 0) *k = &bucket_kinds[i];
    if (!*k) {
        http_problem(resp, 400, "invalid-api-params", NULL, "bucket: day or hour (or none)");
        return false;
    }
    *nb = (size_t)((to - from) / (*k)->ms);
    if (*nb > (*k)->max) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "bucket=%s: a period of at most %zu %ss", (*k)->name, (*k)->max, (*k)->name);
        return false;
    }
    return true;
}

/* Each session's figures in the period [$1, $2) ms, per bucket of $5 ms (0:
 * one), ordered by group key, session and bucket; $3/$4/$6 the caller's
 * scope (usage_scope). Columns: key, name, session, bucket start (ms),
 * USAGE_HOURS_SUMS. */
static char *period_sql(usage_group by)
{
    return ts_asprintf(
        "SELECT %s, %s, u.session_id::text,"
        " CASE WHEN $5::bigint > 0 THEN (extract(epoch FROM h.hour) * 1000)::bigint"
        " / $5::bigint * $5::bigint ELSE 0 END, " USAGE_HOURS_SUMS " FROM registry.session_usage u"
        " JOIN registry.session_usage_hours h ON h.session_id = u.session_id"
        " WHERE h.hour >= to_timestamp($1::float8 / 1000)"
        " AND h.hour < to_timestamp($2::float8 / 1000)"
        " AND ($3::text = '' OR u.user_id = nullif($3::text, '')::uuid)"
        " AND ($4::text = '' OR u.domain_name = $4) AND NOT (u.user_id = ANY($6::uuid[]))"
        " GROUP BY 1, 2, 3, 4 ORDER BY 1, 3, 4",
        group_cols[by].key, group_cols[by].name);
}

/* The rows of period_sql into groups (*n of them, heap). */
static group_sum *groups_of(const PGresult *r, int64_t from, const bucket_kind *k, size_t nb,
                            size_t *n)
{
    int rows = PQntuples(r);
    group_sum *g = ts_calloc((size_t)rows + 1, sizeof(*g));
    const char *session = "";
    *n = 0;
    for (int i = 0; i < rows; i++) {
        usage_totals part;
        usage_row_totals(r, i, 4, &part);
        const char *key = PQgetvalue(r, i, 0);
        if (*n == 0 || strcmp(g[*n - 1].key, key) != 0) {
            g[*n].key = ts_strdup(key);
            g[*n].name = ts_strdup(PQgetvalue(r, i, 1));
            if (k) g[*n].buckets = ts_calloc(nb, sizeof(bucket_sum));
            (*n)++;
            session = "";
        }
        group_sum *gs = &g[*n - 1];
        if (strcmp(session, PQgetvalue(r, i, 2)) != 0) gs->all.sessions++;
        session = PQgetvalue(r, i, 2);
        sum_add(&gs->all, &part);
        if (!k) continue;
        int64_t at = strtoll(PQgetvalue(r, i, 3), NULL, 10);
        if (at < from || (size_t)((at - from) / k->ms) >= nb) continue; /* outside: not queried */
        bucket_sum *b = &gs->buckets[(at - from) / k->ms];
        b->sessions++;
        sum_add(b, &part);
    }
    return g;
}

static void h_usage(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    usage_group by = USAGE_BY_USER;
    const char *gb = http_query_arg(req, "group_by"), *fmt = http_query_arg(req, "format");
    if (gb && !usage_group_parse(gb, &by)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "group_by: one of user, project, domain, resource_group, image");
        return;
    }
    bool csv = fmt && strcmp(fmt, "csv") == 0;
    if (fmt && *fmt && !csv && strcmp(fmt, "json") != 0) {
        http_problem(resp, 400, "invalid-api-params", NULL, "format: json or csv");
        return;
    }
    int64_t from, to;
    if (!usage_period_arg(req, resp, "start", "end", &from, &to)) return;
    const bucket_kind *k;
    size_t nb;
    if (!bucket_arg(req, resp, from, to, &k, &nb)) return;
    ts_caller c;
    if (!caller_get(req, resp, NULL, &c)) return;
    usage_scope sc;
    usage_scope_of(&c, &sc);
    caller_free(&c);
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) {
        usage_scope_free(&sc);
        return;
    }
    char *sql = period_sql(by);
    char f[24], t[24], bms[24];
    snprintf(f, sizeof(f), "%" PRId64, from);
    snprintf(t, sizeof(t), "%" PRId64, to);
    snprintf(bms, sizeof(bms), "%" PRId64, k ? k->ms : 0);
    const char *p[] = {f, t, sc.user_id, sc.domain, bms, sc.hidden};
    PGresult *r = pgjson_query(conn, resp, "read usage", sql, 6, p);
    free(sql);
    usage_scope_free(&sc);
    pgjson_put(s, conn);
    if (!r) return;
    size_t n;
    group_sum *g = groups_of(r, from, k, nb, &n);
    PQclear(r);
    if (csv) {
        reply_csv(resp, by, g, n, from, k, nb);
    } else {
        json_t *items = json_array();
        for (size_t i = 0; i < n; i++) {
            json_t *o = usage_totals_json(&g[i].all.t);
            json_object_set_new(o, usage_group_name(by), json_string(g[i].key));
            json_object_set_new(o, "name", json_string(g[i].name));
            json_object_set_new(o, "sessions", json_integer(g[i].all.sessions));
            if (k) json_object_set_new(o, k->list, buckets_json(k, g[i].buckets, from, nb));
            json_array_append_new(items, o);
        }
        char a[16], b[16];
        json_t *out = json_pack("{s:s, s:s, s:s, s:o}", "start", iso_day(from, a, sizeof(a)), "end",
                                iso_day(to - DAY_MS, b, sizeof(b)), "group_by",
                                usage_group_name(by), "items", items);
        if (k) json_object_set_new(out, "bucket", json_string(k->name));
        http_reply_json(resp, 200, out);
    }
    for (size_t i = 0; i < n; i++) {
        free(g[i].key);
        free(g[i].name);
        free(g[i].buckets);
    }
    free(g);
}

json_t *usage_live_json(PGconn *conn, const char *session_id)
{
    const char *p[] = {session_id};
    ts_err err = {{0}};
    PGresult *r = reg_exec(
        conn,
        "SELECT count(*), coalesce(sum(x.cpu_cores), 0), coalesce(sum(x.mem_bytes), 0),"
        " coalesce(max(x.mem_peak_bytes), 0), coalesce(avg(x.gpu_util_pct), 0),"
        " coalesce(sum(x.gpu_mem_bytes), 0), max(x.interval_end)"
        " FROM registry.kernels k CROSS JOIN LATERAL (SELECT * FROM registry.usage_samples us"
        " WHERE us.kernel_id = k.id ORDER BY us.interval_end DESC LIMIT 1) x"
        " WHERE k.session_id = $1::uuid AND k.status NOT IN " SQL_FINAL,
        1, p, &err);
    if (!r) {
        TLOG_WARN("live usage unreadable", "error=\"%s\"", err.msg);
        return NULL;
    }
    json_t *out = json_object();
    if (PQntuples(r) == 1 && atoi(PQgetvalue(r, 0, 0)) > 0) {
        double cores = strtod(PQgetvalue(r, 0, 1), NULL);
        json_int_t mem = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
        json_int_t peak = strtoll(PQgetvalue(r, 0, 3), NULL, 10);
        double gutil = strtod(PQgetvalue(r, 0, 4), NULL);
        json_int_t gmem = strtoll(PQgetvalue(r, 0, 5), NULL, 10);
        json_object_set_new(out, "live",
                            json_pack("{s:f, s:I, s:I, s:f, s:I, s:o}", "cpu_cores", cores,
                                      "mem_bytes", mem, "mem_peak_bytes", peak, "gpu_util_pct",
                                      gutil, "gpu_mem_bytes", gmem, "at",
                                      pgjson_cell_json(r, 0, 6)));
        /* Backend.AI's last_stat: metric -> {"current", "unit_hint", ...} as text */
        char a[32], b[32], c2[32], d[32];
        snprintf(a, sizeof(a), "%.1f", cores * 100.0);
        snprintf(b, sizeof(b), "%lld", (long long)mem);
        snprintf(c2, sizeof(c2), "%lld", (long long)gmem);
        snprintf(d, sizeof(d), "%.1f", gutil);
        json_object_set_new(
            out, "lastStat",
            json_pack("{s:{s:s, s:s}, s:{s:s, s:s, s:I}, s:{s:s, s:s}, s:{s:s, s:s}}", "cpu_util",
                      "current", a, "unit_hint", "percent", "mem", "current", b, "unit_hint",
                      "bytes", "peak", peak, "cuda_mem", "current", c2, "unit_hint", "bytes",
                      "cuda_util", "current", d, "unit_hint", "percent"));
    } else {
        json_object_set_new(out, "live", json_null());
        json_object_set_new(out, "lastStat", json_object());
    }
    PQclear(r);
    json_t *kernels = usage_live_kernels(conn, session_id);
    json_object_set_new(out, "kernelLiveStat", kernels ? kernels : json_object());
    return out;
}

void usage_api_routes(svc *s)
{
    http_route(svc_router(s), "GET", "/v1/usage", h_usage, s);
}
