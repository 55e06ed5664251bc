/* bgtasks.c: background tasks in registry.bgtasks (bgtasks.h). */
#include "bgtasks.h"

#include "caller.h"
#include "db_common.h"

#include "libcommon/log.h"
#include "libcommon/pgjson.h"

#include <stdio.h>
#include <string.h>

static char g_runner[128];

static const char DELETE_OLD[] = "DELETE FROM registry.bgtasks WHERE status <> 'running' AND "
                                 "ended_at < now() - interval '1 day'";

bool bgtask_create(const char *kind, const char *user_id, const char *access_key,
                   char id_out[TS_UUID_STRLEN], ts_err *err)
{
    PGconn *conn = reg_pg_get(err);
    if (!conn) return false;
    ts_uuid4(id_out);
    const char *p[] = {id_out, kind, user_id, access_key, g_runner};
    bool ok =
        reg_run(conn,
                "INSERT INTO registry.bgtasks (id, kind, owner_user_id, owner_access_key, runner)"
                " VALUES ($1::uuid, $2, $3::uuid, $4, $5)",
                5, p, err);
    ts_err ignored = {{0}};
    if (ok && !reg_run(conn, DELETE_OLD, 0, NULL, &ignored))
        TLOG_WARN("old background tasks not deleted", "error=%s", ignored.msg);
    reg_pg_put(conn);
    if (ok) TLOG_INFO("background task started", "task=%s kind=%s", id_out, kind);
    return ok;
}

static void _update(const char *id, const char *sql, int n, const char *const *p)
{
    ts_err err = {{0}};
    PGconn *conn = reg_pg_get(&err);
    bool ok = false;
    if (conn) {
        ok = reg_run(conn, sql, n, p, &err);
        reg_pg_put(conn);
    }
    if (!ok) TLOG_WARN("background task not updated", "task=%s error=%s", id, err.msg);
}

void bgtask_progress(const char *id, int64_t done, int64_t total, const char *message)
{
    char d[24], t[24];
    snprintf(d, sizeof(d), "%lld", (long long)done);
    snprintf(t, sizeof(t), "%lld", (long long)total);
    const char *p[] = {id, d, t, message};
    _update(id,
            "UPDATE registry.bgtasks SET progress = $2::bigint, total = $3::bigint,"
            " message = COALESCE($4, message), updated_at = now()"
            " WHERE id = $1::uuid AND status = 'running'",
            4, p);
}

void bgtask_finish(const char *id, const char *status, const char *message)
{
    const char *p[] = {id, status, message ? message : ""};
    _update(id,
            "UPDATE registry.bgtasks SET status = $2, message = $3, updated_at = now(), ended_at = "
            "now()"
            " WHERE id = $1::uuid AND status = 'running'",
            3, p);
    TLOG_INFO("background task ended", "task=%s status=%s", id, status);
}

bool bgtasks_start(svc *s, ts_err *err)
{
    snprintf(g_runner, sizeof(g_runner), "%s", svc_instance(s));
    PGconn *conn = reg_pg_get(err);
    if (!conn) return false;
    const char *p[] = {g_runner};
    bool ok =
        reg_run(conn,
                "UPDATE registry.bgtasks SET status = 'failed', message = 'the registry running it"
                " stopped', updated_at = now(), ended_at = now() WHERE status = 'running'"
                " AND (runner = $1 OR updated_at < now() - interval '10 minutes')",
                1, p, err) &&
        reg_run(conn, DELETE_OLD, 0, NULL, err);
    reg_pg_put(conn);
    return ok;
}

static void h_get(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    const char *id = http_param(req, "id");
    if (!ts_uuid_valid(id)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "a task id is a UUID");
        return;
    }
    ts_caller c;
    if (!caller_get(req, resp, NULL, &c)) return;
    tlog_ctx_entity("task", id);
    PGconn *conn = pgjson_get(s, resp);
    if (conn) {
        const char *p[] = {id, c.user_id, caller_is_superadmin(&c) ? "t" : "f"};
        PGresult *r =
            pgjson_query(conn, resp, "read background task",
                         "SELECT id AS task_id, kind, status, progress AS current_progress,"
                         " total AS total_progress, message, created_at, updated_at, ended_at FROM "
                         "registry.bgtasks"
                         " WHERE id = $1::uuid AND (owner_user_id = $2::uuid OR $3::boolean)",
                         3, p);
        if (r && PQntuples(r) == 1)
            http_reply_json(resp, 200, pgjson_row_json(r, 0));
        else if (r)
            http_problem(resp, 404, "not-found", NULL, "no background task %s", id);
        PQclear(r);
        pgjson_put(s, conn);
    }
    caller_free(&c);
}

void bgtasks_routes(svc *s)
{
    http_route(svc_router(s), "GET", "/v1/bgtasks/{id}", h_get, s);
}
