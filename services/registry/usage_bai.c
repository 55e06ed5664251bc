/* usage_bai.c: Backend.AI's /resource/usage/month and /period (usage_bai.h). */
#include "usage_bai.h"

#include "caller.h"
#include "usage_api.h"
#include "usage_calc.h"
#include "usage_hours.h"

#include "libcommon/buf.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "libcommon/slots.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Columns: 0 session id, 1 name, 2 access key, 3 user id, 4 project id,
 * 5 project name, 6 domain, 7 resource group, 8 image, 9 created_at,
 * 10 terminated_at, 11 status, 12 status_info, 13 status_changed_at,
 * 14 cluster_mode, 15 cluster_size, 16 requested_slots, 17 shmem, 18 agents,
 * 19 container ids, 20 main kernel id, 21 used_time, 22 used_days, then the
 * sums of its hours in the period, USAGE_HOURS_SUMS, from 23 (sessions with
 * none are left out). $1/$2: [from, to) ms; $3: a domain or ''; $4: project
 * ids, comma-separated, or ''; $5: the users not shown (usage_scope). */
#define COL_TOTALS 23
static const char rows_sql[] =
    "SELECT u.session_id::text, u.session_name, u.access_key, u.user_id::text,"
    " u.project_id::text, u.group_name, u.domain_name, u.resource_group, u.image,"
    " s.created_at, s.terminated_at, s.status, s.status_info, s.status_changed_at,"
    " s.cluster_mode, s.cluster_size, s.requested_slots::text, s.resource_opts->>'shmem',"
    " (SELECT coalesce(json_agg(DISTINCT k.agent_id) FILTER (WHERE k.agent_id IS NOT NULL),"
    "  '[]') FROM registry.kernels k WHERE k.session_id = u.session_id) AS agents,"
    " (SELECT coalesce(json_agg(k.container_id) FILTER (WHERE k.container_id <> ''), '[]')"
    "  FROM registry.kernels k WHERE k.session_id = u.session_id) AS containers,"
    " (SELECT k.id::text FROM registry.kernels k WHERE k.session_id = u.session_id"
    "  ORDER BY k.cluster_idx LIMIT 1),"
    " (s.terminated_at - s.created_at)::text,"
    " (s.terminated_at AT TIME ZONE 'UTC')::date - (s.created_at AT TIME ZONE 'UTC')::date + 1,"
    " p.* FROM (SELECT " USAGE_HOURS_SUMS ", h.session_id AS sid"
    "  FROM registry.session_usage_hours h WHERE h.hour >= to_timestamp($1::float8 / 1000)"
    "  AND h.hour < to_timestamp($2::float8 / 1000) GROUP BY h.session_id) p"
    " JOIN registry.session_usage u ON u.session_id = p.sid"
    " LEFT JOIN registry.sessions s ON s.id = u.session_id"
    " WHERE ($3::text = '' OR u.domain_name = $3) AND NOT (u.user_id = ANY($5::uuid[]))"
    " AND ($4::text = '' OR u.project_id::text = ANY (string_to_array($4, ',')))"
    " ORDER BY coalesce(u.project_id::text, ''), u.first_sample_at, u.session_id";

/* Backend.AI's ResourceUsage figures of a row (or a project's sum). */
typedef struct bai_usage {
    double cpu_allocated; /* cores */
    double cpu_used;      /* CPU time in the period, ms */
    double mem_allocated; /* bytes */
    double mem_used;      /* peak bytes */
    double shared_memory; /* bytes */
    double gpu_allocated; /* devices (fractions included) */
    double io_read;       /* block I/O bytes in the period */
    double io_write;
} bai_usage;

static json_t *null_or_str(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? json_null() : json_string(PQgetvalue(r, row, col));
}

static void row_usage(const PGresult *r, int row, const usage_totals *part, bai_usage *u)
{
    memset(u, 0, sizeof(*u));
    slots_t sl;
    slots_clear(&sl);
    json_t *j = json_loads(PQgetvalue(r, row, 16), 0, NULL);
    ts_err err;
    if (!j || !slots_from_json(&sl, j, &err)) slots_clear(&sl);
    json_decref(j);
    double n = PQgetisnull(r, row, 15) ? 1 : strtod(PQgetvalue(r, row, 15), NULL);
    u->cpu_allocated = (double)slots_get(&sl, SLOT_CPU) / 1000.0 * n;
    u->mem_allocated = (double)slots_get(&sl, SLOT_MEM) * n;
    u->gpu_allocated = ((double)slots_get(&sl, SLOT_CUDA_DEVICE) +
                        (double)slots_get(&sl, SLOT_CUDA_SHARES) / SLOT_SHARES_PER_DEVICE) *
                       n;
    int64_t shm;
    if (!PQgetisnull(r, row, 17) && slot_parse(SLOT_MEM, PQgetvalue(r, row, 17), &shm, &err))
        u->shared_memory = (double)shm;
    u->cpu_used = (double)part->cpu_ms;
    u->mem_used = (double)part->mem_peak_bytes;
    u->io_read = (double)part->io_read_bytes;
    u->io_write = (double)part->io_write_bytes;
}

static void usage_sum(bai_usage *a, const bai_usage *b)
{
    a->cpu_allocated += b->cpu_allocated;
    a->cpu_used += b->cpu_used;
    a->mem_allocated += b->mem_allocated;
    a->mem_used += b->mem_used;
    a->shared_memory += b->shared_memory;
    a->gpu_allocated += b->gpu_allocated;
    a->io_read += b->io_read;
    a->io_write += b->io_write;
}

/* ResourceUsage.to_json (keys prefixed, "g_" for the month's groups). */
static void set_usage(json_t *o, const char *prefix, const bai_usage *u)
{
    char k[64];
#define SET(name, v) (snprintf(k, sizeof(k), "%s%s", prefix, name), json_object_set_new(o, k, v))
    SET("nfs", json_array());
    SET("cpu_allocated", json_real(u->cpu_allocated));
    SET("cpu_used", json_real(u->cpu_used));
    SET("mem_allocated", json_integer((json_int_t)u->mem_allocated));
    SET("mem_used", json_integer((json_int_t)u->mem_used));
    SET("shared_memory", json_integer((json_int_t)u->shared_memory));
    SET("disk_allocated", json_integer(0));
    SET("disk_used", json_null());
    SET("io_read", json_integer((json_int_t)u->io_read));
    SET("io_write", json_integer((json_int_t)u->io_write));
    SET("device_type", json_array());
    SET("smp", json_null());
    SET("gpu_mem_allocated", json_null());
    SET("gpu_allocated", json_real(u->gpu_allocated));
#undef SET
}

/* The rows of the period, answered as a problem on failure (NULL). */
static PGresult *query_rows(svc *s, http_resp *resp, int64_t from, int64_t to,
                            const usage_scope *sc, const char *projects)
{
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) return NULL;
    char f[24], t[24];
    snprintf(f, sizeof(f), "%" PRId64, from);
    snprintf(t, sizeof(t), "%" PRId64, to);
    const char *p[] = {f, t, sc->domain, projects, sc->hidden};
    PGresult *r = pgjson_query(conn, resp, "read usage", rows_sql, 5, p);
    pgjson_put(s, conn);
    return r;
}

/* The caller, an administrator (403 otherwise), and its scope (free it with
 * usage_scope_free after true). */
static bool admin_scope(http_req *req, http_resp *resp, usage_scope *sc)
{
    ts_caller c;
    if (!caller_get(req, resp, NULL, &c)) return false;
    bool admin = caller_is_admin(&c);
    if (admin) usage_scope_of(&c, sc);
    caller_free(&c);
    if (!admin)
        http_problem(resp, 403, "forbidden", NULL, "only administrators read usage reports");
    return admin;
}

/* The rows of the period for an administrator; NULL after a problem. */
static PGresult *admin_rows(svc *s, http_req *req, http_resp *resp, int64_t from, int64_t to,
                            const char *projects)
{
    usage_scope sc;
    if (!admin_scope(req, resp, &sc)) return NULL;
    PGresult *r = query_rows(s, resp, from, to, &sc, projects);
    usage_scope_free(&sc);
    return r;
}

/* "id,id" of UUIDs, checked, into out ('' when s is empty); false after a 400. */
static bool id_list(http_resp *resp, const char *name, const char *s, char **out)
{
    *out = ts_strdup(s ? s : "");
    char *save = NULL, *copy = ts_strdup(*out);
    bool ok = true;
    for (char *tok = strtok_r(copy, ",", &save); tok && ok; tok = strtok_r(NULL, ",", &save))
        ok = ts_uuid_valid(tok);
    if (ok && **out && (strstr(*out, ",,") || (*out)[0] == ',' || (*out)[strlen(*out) - 1] == ','))
        ok = false;
    free(copy);
    if (!ok) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "%s: project ids (UUIDs), comma-separated", name);
        free(*out);
        *out = NULL;
    }
    return ok;
}

static json_t *c_info(const PGresult *r, int i, const usage_totals *part, bai_usage *u)
{
    row_usage(r, i, part, u);
    json_t *agents = pgjson_cell_json(r, i, 18), *containers = pgjson_cell_json(r, i, 19);
    json_t *o = json_object();
    json_object_set_new(o, "id",
                        PQgetisnull(r, i, 20) ? json_string(PQgetvalue(r, i, 0))
                                              : json_string(PQgetvalue(r, i, 20)));
    json_object_set_new(o, "session_id", json_string(PQgetvalue(r, i, 0)));
    json_object_set(o, "container_id",
                    json_array_size(containers) ? json_array_get(containers, 0) : json_null());
    json_object_set_new(o, "domain_name", json_string(PQgetvalue(r, i, 6)));
    json_object_set_new(o, "group_id", null_or_str(r, i, 4));
    json_object_set_new(o, "group_name", json_string(PQgetvalue(r, i, 5)));
    json_object_set_new(o, "name", json_string(PQgetvalue(r, i, 1)));
    json_object_set_new(o, "access_key", json_string(PQgetvalue(r, i, 2)));
    json_object_set_new(o, "email", json_null());
    json_object_set_new(o, "full_name", json_null());
    json_object_set(o, "agent", json_array_size(agents) ? json_array_get(agents, 0) : json_null());
    set_usage(o, "", u);
    json_object_set_new(o, "used_time", null_or_str(r, i, 21));
    json_object_set_new(o, "used_days", pgjson_cell_json(r, i, 22));
    json_object_set_new(o, "image_id", json_string(PQgetvalue(r, i, 8)));
    json_object_set_new(o, "image_name", json_string(PQgetvalue(r, i, 8)));
    json_object_set_new(o, "created_at", pgjson_cell_json(r, i, 9));
    /* as the reference writes it: str() of the time, "None" while live (its
     * CLI concatenates the two) */
    json_object_set_new(o, "terminated_at",
                        PQgetisnull(r, i, 10) ? json_string("None") : pgjson_cell_json(r, i, 10));
    json_object_set_new(o, "status", pgjson_cell_json(r, i, 11));
    json_object_set_new(o, "status_info", pgjson_cell_json(r, i, 12));
    json_object_set_new(o, "status_changed", pgjson_cell_json(r, i, 13));
    json_object_set_new(o, "status_history", json_object());
    json_object_set_new(o, "cluster_mode", pgjson_cell_json(r, i, 14));
    json_object_set_new(o, "user_id", json_string(PQgetvalue(r, i, 3)));
    json_object_set_new(o, "resource_group", json_string(PQgetvalue(r, i, 7)));
    json_object_set_new(o, "agents", agents);
    json_object_set_new(o, "container_ids", containers);
    json_object_set_new(o, "tessera", usage_totals_json(part));
    return o;
}

/* group_ids of a JSON body (a list of strings, or one) as comma-separated
 * text (heap), "" when absent; NULL after a 400. */
static char *_body_ids(const json_t *body, http_resp *resp)
{
    const json_t *v = json_object_get(body, "group_ids");
    if (!v || json_is_null(v)) return ts_strdup("");
    if (json_is_string(v)) return ts_strdup(json_string_value(v));
    ts_buf b = {0};
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        if (!json_is_string(e)) {
            ts_buf_free(&b);
            http_problem(resp, 400, "invalid-api-params", NULL, "group_ids: a list of project ids");
            return NULL;
        }
        if (i) ts_buf_append_str(&b, ",");
        ts_buf_append_str(&b, json_string_value(e));
    }
    if (!json_is_array(v)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "group_ids: a list of project ids");
        return NULL;
    }
    return ts_buf_steal(&b, NULL);
}

static void h_month(http_req *req, http_resp *resp, void *ctx)
{
    int64_t from, to;
    ts_err err;
    /* in the query, or (Backend.AI's Python client sends a GET with a JSON
     * body) in the body */
    json_t *body = NULL;
    const char *month = http_query_arg(req, "month"), *ids = http_query_arg(req, "group_ids");
    char *body_ids = NULL;
    if (!month && req->body_len) {
        if (!(body = http_json_body(req, resp))) return;
        month = json_string_value(json_object_get(body, "month"));
        if (!ids && !(ids = body_ids = _body_ids(body, resp))) {
            json_decref(body);
            return;
        }
    }
    bool month_ok = usage_parse_month(month, &from, &to, &err);
    char *projects = NULL;
    if (!month_ok) http_problem(resp, 400, "invalid-api-params", NULL, "month: %s", err.msg);
    bool ids_ok = month_ok && id_list(resp, "group_ids", ids, &projects);
    json_decref(body);
    free(body_ids);
    if (!ids_ok) return;
    PGresult *r = admin_rows(ctx, req, resp, from, to, projects);
    free(projects);
    if (!r) return;
    json_t *out = json_array(), *g = NULL, *infos = NULL;
    bai_usage gsum;
    const char *gid = NULL;
    for (int i = 0; i < PQntuples(r); i++) {
        usage_totals part;
        usage_row_totals(r, i, COL_TOTALS, &part);
        const char *pid = PQgetvalue(r, i, 4);
        if (!g || strcmp(gid, pid) != 0) {
            if (g) set_usage(g, "g_", &gsum);
            g = json_pack("{s:s, s:o, s:s}", "domain_name", PQgetvalue(r, i, 6), "g_id",
                          null_or_str(r, i, 4), "g_name", PQgetvalue(r, i, 5));
            infos = json_array();
            json_object_set_new(g, "c_infos", infos);
            json_array_append_new(out, g);
            memset(&gsum, 0, sizeof(gsum));
            gid = pid;
        }
        bai_usage u;
        json_array_append_new(infos, c_info(r, i, &part, &u));
        usage_sum(&gsum, &u);
    }
    if (g) set_usage(g, "g_", &gsum);
    PQclear(r);
    http_reply_json(resp, 200, out);
}

static void h_period(http_req *req, http_resp *resp, void *ctx)
{
    const char *sd = http_query_arg(req, "start_date"), *ed = http_query_arg(req, "end_date");
    if (!sd || !*sd || !ed || !*ed) {
        http_problem(resp, 400, "invalid-api-params", NULL, "start_date and end_date (YYYYMMDD)");
        return;
    }
    int64_t from, to;
    if (!usage_period_arg(req, resp, "start_date", "end_date", &from, &to)) return;
    if (to - from > 100LL * 86400 * 1000) {
        http_problem(resp, 400, "invalid-api-params", NULL, "Cannot query more than 100 days");
        return;
    }
    char *projects;
    const char *pid_arg = http_query_arg(req, "project_id");
    if (pid_arg && *pid_arg && strchr(pid_arg, ',')) pid_arg = "x"; /* one id */
    if (!id_list(resp, "project_id", pid_arg, &projects)) return;
    PGresult *r = admin_rows(ctx, req, resp, from, to, projects);
    free(projects);
    if (!r) return;
    json_t *out = json_array(), *proj = NULL, *sessions = NULL, *pagents = NULL;
    bai_usage psum;
    usage_totals ptot;
    const char *gid = NULL;
    for (int i = 0; i < PQntuples(r); i++) {
        usage_totals part;
        usage_row_totals(r, i, COL_TOTALS, &part);
        const char *pid = PQgetvalue(r, i, 4);
        if (!proj || strcmp(gid, pid) != 0) {
            if (proj) {
                set_usage(json_object_get(proj, "total_usage"), "", &psum);
                json_object_set_new(proj, "tessera", usage_totals_json(&ptot));
            }
            sessions = json_object();
            pagents = json_array();
            proj = json_pack("{s:o, s:s, s:s, s:s, s:o, s:{}, s:o}", "project_id",
                             null_or_str(r, i, 4), "project_name", PQgetvalue(r, i, 5),
                             "domain_name", PQgetvalue(r, i, 6), "group_unit", "project", "agents",
                             pagents, "total_usage", "sessions", sessions);
            json_array_append_new(out, proj);
            memset(&psum, 0, sizeof(psum));
            memset(&ptot, 0, sizeof(ptot));
            gid = pid;
        }
        bai_usage u;
        json_t *c = c_info(r, i, &part, &u);
        usage_sum(&psum, &u);
        ptot.cpu_ms += part.cpu_ms;
        ptot.mem_byte_s += part.mem_byte_s;
        ptot.gpu_device_s += part.gpu_device_s;
        ptot.gpu_share_s += part.gpu_share_s;
        ptot.gpu_busy_ms += part.gpu_busy_ms;
        ptot.net_rx_bytes += part.net_rx_bytes;
        ptot.net_tx_bytes += part.net_tx_bytes;
        ptot.io_read_bytes += part.io_read_bytes;
        ptot.io_write_bytes += part.io_write_bytes;
        for (int ph = 0; ph < USAGE_N_PHASES; ph++)
            ptot.phase_s[ph] += part.phase_s[ph];
        ptot.samples += part.samples;
        if (part.mem_peak_bytes > ptot.mem_peak_bytes) ptot.mem_peak_bytes = part.mem_peak_bytes;
        size_t k;
        json_t *a;
        json_array_foreach(json_object_get(c, "agents"), k, a)
        {
            bool seen = false;
            for (size_t m = 0; m < json_array_size(pagents); m++)
                seen = seen || json_equal(json_array_get(pagents, m), a);
            if (!seen) json_array_append(pagents, a);
        }
        json_t *so = json_pack(
            "{s:O, s:O, s:O, s:O, s:n, s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:n, s:{}, s:n, s:[O],"
            " s:O, s:O, s:O, s:n, s:O, s:n, s:O, s:s, s:{}, s:{}, s:O}",
            "created_at", json_object_get(c, "created_at"), "used_time",
            json_object_get(c, "used_time"), "used_days", json_object_get(c, "used_days"),
            "user_id", json_object_get(c, "user_id"), "user_email", "access_key",
            json_object_get(c, "access_key"), "project_id", json_object_get(c, "group_id"),
            "project_name", json_object_get(c, "group_name"), "kernel_id", json_object_get(c, "id"),
            "container_ids", json_object_get(c, "container_ids"), "session_id",
            json_object_get(c, "session_id"), "session_name", json_object_get(c, "name"),
            "last_stat", "extra_info", "full_name", "images", json_object_get(c, "image_name"),
            "agents", json_object_get(c, "agents"), "status", json_object_get(c, "status"),
            "status_info", json_object_get(c, "status_info"), "status_history", "cluster_mode",
            json_object_get(c, "cluster_mode"), "scheduled_at", "terminated_at",
            json_object_get(c, "terminated_at"), "group_unit", "session", "total_usage", "kernels",
            "tessera", json_object_get(c, "tessera"));
        json_object_set_new(so, "domain_name", json_string(PQgetvalue(r, i, 6)));
        set_usage(json_object_get(so, "total_usage"), "", &u);
        json_object_set_new(sessions, PQgetvalue(r, i, 0), so);
        json_decref(c);
    }
    if (proj) {
        set_usage(json_object_get(proj, "total_usage"), "", &psum);
        json_object_set_new(proj, "tessera", usage_totals_json(&ptot));
    }
    PQclear(r);
    http_reply_json(resp, 200, out);
}

void usage_bai_routes(svc *s)
{
    http_route(svc_router(s), "GET", "/v1/resource/usage/month", h_month, s);
    http_route(svc_router(s), "GET", "/v1/resource/usage/period", h_period, s);
}
