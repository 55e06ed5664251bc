/* quota.c: usage accounting against folder and scope limits (see quota.h).
 * Its callers have the folder in the thread's log context. */
#include "quota.h"

#include "events.h"
#include "libcommon/log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Both updates run or neither counts: the caller rolls back unless both
 * touched one row. */
static const char reserve_sql[] =
    "WITH f AS (UPDATE vfolder.vfolders SET usage_bytes = usage_bytes + $2::bigint"
    "   WHERE id = $1::uuid AND status IN ('ready', 'cloning')"
    "     AND (quota_bytes = 0 OR usage_bytes + $2::bigint <= quota_bytes)"
    "   RETURNING quota_scope_id),"
    " q AS (UPDATE vfolder.quota_scopes s SET usage_bytes = s.usage_bytes + $2::bigint,"
    "   modified_at = now() FROM f WHERE s.id = f.quota_scope_id"
    "     AND (s.limit_bytes = 0 OR s.usage_bytes + $2::bigint <= s.limit_bytes) RETURNING s.id)"
    " SELECT (SELECT count(*) FROM f), (SELECT count(*) FROM q)";

static const char release_sql[] =
    "WITH f AS (UPDATE vfolder.vfolders SET usage_bytes = greatest(usage_bytes - $2::bigint, 0)"
    "   WHERE id = $1::uuid RETURNING quota_scope_id)"
    " UPDATE vfolder.quota_scopes s SET usage_bytes = greatest(s.usage_bytes - $2::bigint, 0),"
    "   modified_at = now() FROM f WHERE s.id = f.quota_scope_id";

static const char usage_sql[] =
    "SELECT v.usage_bytes, v.quota_bytes, coalesce(s.usage_bytes, 0), coalesce(s.limit_bytes, 0),"
    " v.quota_scope_id, v.host"
    " FROM vfolder.vfolders v LEFT JOIN vfolder.quota_scopes s ON s.id = v.quota_scope_id"
    " WHERE v.id = $1::uuid";

static PGconn *_conn(svc *s, ts_err *err)
{
    pg_pool *p = svc_pg(s);
    if (!p) {
        ts_err_set(err, "not connected to PostgreSQL yet");
        return NULL;
    }
    return pg_pool_get(p, 5000, err);
}

static PGresult *_exec(PGconn *c, const char *sql, int n, const char *const *params, ts_err *err)
{
    PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        ts_err_set(err, "%s", PQresultErrorMessage(r));
        PQclear(r);
        return NULL;
    }
    return r;
}

bool vf_quota_scope_touch(PGconn *conn, const char *scope_id, int64_t limit, ts_err *err)
{
    char lim[24];
    snprintf(lim, sizeof(lim), "%" PRId64, limit < 0 ? 0 : limit);
    const char *p[] = {scope_id, lim, limit < 0 ? "f" : "t"};
    PGresult *r =
        _exec(conn,
              "INSERT INTO vfolder.quota_scopes (id, limit_bytes) VALUES ($1, $2::bigint)"
              " ON CONFLICT (id) DO UPDATE SET limit_bytes = $2::bigint, modified_at = now()"
              " WHERE $3::boolean AND vfolder.quota_scopes.limit_bytes <> $2::bigint",
              3, p, err);
    if (!r) return false;
    PQclear(r);
    return true;
}

static vf_quota_rc _reserve(svc *s, const char *id, int64_t bytes, const char *request_id,
                            ts_err *err)
{
    if (bytes <= 0) return VF_QUOTA_OK;
    PGconn *c = _conn(s, err);
    if (!c) return VF_QUOTA_ERROR;
    char b[24];
    snprintf(b, sizeof(b), "%" PRId64, bytes);
    const char *p[] = {id, b};
    vf_quota_rc rc = VF_QUOTA_ERROR;
    if (!pg_begin(c, err)) goto out;
    PGresult *r = _exec(c, reserve_sql, 2, p, err);
    if (!r) {
        pg_rollback(c);
        goto out;
    }
    bool ok = strcmp(PQgetvalue(r, 0, 0), "1") == 0 && strcmp(PQgetvalue(r, 0, 1), "1") == 0;
    PQclear(r);
    if (ok) {
        rc = pg_commit(c, err) ? VF_QUOTA_OK : VF_QUOTA_ERROR;
        goto out;
    }
    pg_rollback(c);
    rc = VF_QUOTA_EXCEEDED;
    /* Which limit, for the event and the message. */
    const char *p1[] = {id};
    r = _exec(c, usage_sql, 1, p1, err);
    if (r && PQntuples(r) == 1) {
        int64_t used = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        int64_t limit = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
        int64_t sused = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
        int64_t slimit = strtoll(PQgetvalue(r, 0, 3), NULL, 10);
        const char *scope = PQgetvalue(r, 0, 4);
        bool folder_full = limit > 0 && used + bytes > limit;
        ts_err_set(err,
                   "%s quota exceeded: %" PRId64 " of %" PRId64 " bytes used, %" PRId64
                   " more requested",
                   folder_full ? "folder" : "quota scope", folder_full ? used : sused,
                   folder_full ? limit : slimit, bytes);
        vf_event_quota_exceeded(s, request_id, id, folder_full ? "" : scope,
                                folder_full ? used : sused, folder_full ? limit : slimit,
                                PQgetvalue(r, 0, 5));
        TLOG_INFO("quota exceeded", "scope=%s bytes=%" PRId64, scope, bytes);
    } else {
        ts_err_set(err, "the folder is gone or not ready");
    }
    if (r) PQclear(r);
out:
    pg_pool_put(svc_pg(s), c);
    return rc;
}

vf_quota_rc vf_quota_reserve(svc *s, const vf_folder *f, int64_t bytes, ts_err *err)
{
    return _reserve(s, f->id, bytes, NULL, err);
}

vf_quota_rc vf_quota_charge(svc *s, const char *vfolder_id, int64_t bytes, const char *request_id,
                            ts_err *err)
{
    return _reserve(s, vfolder_id, bytes, request_id, err);
}

void vf_quota_release(svc *s, const vf_folder *f, int64_t bytes)
{
    if (bytes <= 0) return;
    ts_err err = {{0}};
    bool ok = false;
    PGconn *c = _conn(s, &err);
    if (c) {
        char b[24];
        snprintf(b, sizeof(b), "%" PRId64, bytes);
        const char *p[] = {f->id, b};
        PGresult *r = _exec(c, release_sql, 2, p, &err);
        if (r) {
            PQclear(r);
            ok = true;
        }
        pg_pool_put(svc_pg(s), c);
    }
    if (!ok) TLOG_ERROR("quota release failed", "bytes=%" PRId64 " error=\"%s\"", bytes, err.msg);
}

bool vf_usage(svc *s, const vf_folder *f, int64_t *used, int64_t *limit, int64_t *scope_used,
              int64_t *scope_limit, ts_err *err)
{
    PGconn *c = _conn(s, err);
    if (!c) return false;
    const char *p[] = {f->id};
    PGresult *r = _exec(c, usage_sql, 1, p, err);
    bool ok = r && PQntuples(r) == 1;
    if (ok) {
        if (used) *used = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        if (limit) *limit = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
        if (scope_used) *scope_used = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
        if (scope_limit) *scope_limit = strtoll(PQgetvalue(r, 0, 3), NULL, 10);
    } else if (r) {
        ts_err_set(err, "vfolder %s not found", f->id);
    }
    if (r) PQclear(r);
    pg_pool_put(svc_pg(s), c);
    return ok;
}

void vf_quota_problem(http_resp *resp, vf_quota_rc rc, const vf_folder *f, int64_t bytes,
                      const ts_err *err)
{
    if (rc == VF_QUOTA_EXCEEDED) {
        http_problem(resp, 412, "quota-exceeded", "Quota Exceeded", "vfolder %s: %s",
                     f ? f->name : "?", err && err->msg[0] ? err->msg : "quota exceeded");
        return;
    }
    (void)bytes;
    TLOG_ERROR("quota accounting failed", "error=\"%s\"", err ? err->msg : "");
    http_problem(resp, 500, "internal-server-error", NULL, "quota accounting failed");
}

bool vf_quota_forget(PGconn *conn, const char *vfolder_id, ts_err *err)
{
    const char *p[] = {vfolder_id};
    PGresult *r = _exec(conn,
                        "WITH f AS (UPDATE vfolder.vfolders SET usage_bytes = 0"
                        "   WHERE id = $1::uuid RETURNING quota_scope_id,"
                        "   (SELECT usage_bytes FROM vfolder.vfolders WHERE id = $1::uuid) AS was)"
                        " UPDATE vfolder.quota_scopes s SET usage_bytes ="
                        "   greatest(s.usage_bytes - f.was, 0), modified_at = now()"
                        " FROM f WHERE s.id = f.quota_scope_id",
                        1, p, err);
    if (!r) return false;
    PQclear(r);
    return true;
}

int64_t vf_quota_scope_limit(const ts_caller *c, const vf_folder *f)
{
    if (f->ownership == VF_OWNER_USER)
        return strcmp(f->owner_id, c->user_id) == 0 ? vf_caller_max_quota_scope_size(c) : -1;
    const json_t *p = vf_caller_project(c, f->owner_id);
    if (!p) return -1;
    json_t *v = json_object_get(p, "max_quota_scope_size");
    return json_is_integer(v) && json_integer_value(v) > 0 ? json_integer_value(v) : 0;
}

void vf_quota_scope_refresh(svc *s, const ts_caller *c, const vf_folder *f)
{
    int64_t limit = vf_quota_scope_limit(c, f);
    if (limit < 0) return;
    ts_err err = {{0}};
    PGconn *conn = pg_pool_get(svc_pg(s), 5000, &err);
    bool ok = conn && vf_quota_scope_touch(conn, f->quota_scope, limit, &err);
    if (!ok) TLOG_WARN("quota scope not updated", "scope=%s error=\"%s\"", f->quota_scope, err.msg);
    if (conn) pg_pool_put(svc_pg(s), conn);
}
