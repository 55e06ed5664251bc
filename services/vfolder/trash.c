/* trash.c: a folder's way out (trash.h): DELETE moves it to the trash,
 * restore brings it back, purge (or the sweeper, past
 * vfolder.trash_retention) removes it for good. */
#include "trash.h"

#include "events.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "mount_guard.h"
#include "quota.h"
#include "request.h"
#include "volumes.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The folder id a body names ("vfolder_id", "vfolderId" or "id", dashed or
 * as Backend.AI's clients send it, 32 hex digits) into id; false after a
 * 400. */
static bool _body_id(vf_req *x, char id[TS_UUID_STRLEN])
{
    static const char *const keys[] = {"vfolder_id", "vfolderId", "id", NULL};
    if (!vf_req_body(x, NULL)) return false;
    for (const char *const *k = keys; *k; k++) {
        json_t *v = json_object_get(x->fr.body, *k);
        if (!v || json_is_null(v)) continue;
        if (json_is_string(v) && ts_uuid_normalize(json_string_value(v), id)) return true;
        http_problem(x->fr.resp, 400, "invalid-api-params", NULL, "%s must be a vfolder id", *k);
        return false;
    }
    http_problem(x->fr.resp, 400, "invalid-api-params", NULL, "vfolder_id (or id) is required");
    return false;
}

/* Move x's folder (the route's {name} or x->name) to the trash. */
static void _trash(vf_req *x, http_req *req, http_resp *resp)
{
    const vf_folder *f = &x->f;
    if (!vf_req_folder(x, VF_PERM_OWNER) ||
        !vf_req_host_allows(x, VF_HOST_DELETE, false, "deleting vfolders on") ||
        !vf_mount_guard_free(f->id, f->name, req->request_id, resp))
        return;
    PGconn *conn = pgjson_get(x->fr.s, resp);
    if (!conn) return;
    const char *p[] = {f->id};
    bool done = false;
    if (pgjson_begin(conn, resp)) {
        PGresult *r =
            pgjson_query(conn, resp, "trash vfolder",
                         "UPDATE vfolder.vfolders SET status = 'trash', trashed_at = now()"
                         " WHERE id = $1::uuid AND status = 'ready'",
                         1, p);
        ts_err err = {{0}};
        if (r && strcmp(PQcmdTuples(r), "1") != 0) {
            http_problem(resp, 404, "vfolder-not-found", "Virtual Folder Not Found",
                         "vfolder %s not found", f->name);
        } else if (r && !vf_volume_trash(vf_volume_find(f->host), f->id, &err)) {
            http_problem(resp, 500, "internal-server-error", NULL, "%s", err.msg);
        } else if (r) {
            done = pgjson_commit(conn, resp);
            if (!done && !vf_volume_restore(vf_volume_find(f->host), f->id, &err))
                TLOG_ERROR("restore after failed trash", "error=\"%s\"", err.msg);
        }
        PQclear(r);
        if (!done) pg_rollback(conn);
    }
    pgjson_put(x->fr.s, conn);
    if (done) {
        char name[2 * VF_NAME_MAX];
        TLOG_INFO("vfolder trashed", "name=%s", tlog_quote(name, sizeof(name), f->name));
        vf_event_deleted(x->fr.s, req->request_id, f->id, f->name, f->host, x->c.user_id, false);
        http_reply(resp, 204, NULL, NULL, 0);
    }
}

void vf_h_delete(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    if (!vf_req_begin(&x, ctx, req, resp)) return;
    _trash(&x, req, resp);
    vf_req_end(&x);
}

void vf_h_delete_by_id(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    char id[TS_UUID_STRLEN];
    if (!vf_req_begin(&x, ctx, req, resp)) return;
    if (_body_id(&x, id)) {
        x.name = id;
        _trash(&x, req, resp);
    }
    vf_req_end(&x);
}

/* Purge one trashed folder (status 'trash' -> 'purging' -> 'purged'); by:
 * the user who asked (NULL: the sweeper). False (err says why) when it was
 * not in the trash (another purge took it first) or could not be removed. */
static bool _purge(svc *s, PGconn *conn, const char *id, const char *name, const char *host,
                   const char *by, const char *request_id, ts_err *err)
{
    const char *p[] = {id};
    PGresult *r = PQexecParams(conn,
                               "UPDATE vfolder.vfolders SET status = 'purging' WHERE id = $1::uuid"
                               " AND status = 'trash'",
                               1, NULL, p, NULL, NULL, 0);
    bool mine = PQresultStatus(r) == PGRES_COMMAND_OK && strcmp(PQcmdTuples(r), "1") == 0;
    PQclear(r);
    if (!mine) {
        ts_err_set(err, "vfolder %s is not in the trash", id);
        return false;
    }
    const vf_volume *v = vf_volume_find(host);
    if (v && !vf_volume_purge(v, id, err)) {
        r = PQexecParams(conn, "UPDATE vfolder.vfolders SET status = 'trash' WHERE id = $1::uuid",
                         1, NULL, p, NULL, NULL, 0);
        PQclear(r);
        return false;
    }
    if (!pg_begin(conn, err)) return false;
    if (!vf_quota_forget(conn, id, err)) {
        pg_rollback(conn);
        return false;
    }
    r = PQexecParams(conn,
                     "UPDATE vfolder.vfolders SET status = 'purged', purged_at = now()"
                     " WHERE id = $1::uuid",
                     1, NULL, p, NULL, NULL, 0);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    r = PQexecParams(conn,
                     "UPDATE vfolder.invitations SET state = 'canceled', modified_at = now()"
                     " WHERE vfolder_id = $1::uuid AND state = 'pending'",
                     1, NULL, p, NULL, NULL, 0);
    PQclear(r);
    if (!ok || !pg_commit(conn, err)) {
        if (ok)
            ts_err_prefix(err, "commit");
        else
            ts_err_set(err, "mark purged failed");
        pg_rollback(conn);
        return false;
    }
    char qname[2 * VF_NAME_MAX];
    TLOG_INFO("vfolder purged", "name=%s%s", tlog_quote(qname, sizeof(qname), name),
              by ? "" : " by=sweeper"); /* by: the user in the log context */
    vf_event_deleted(s, request_id, id, name, host, by, true);
    return true;
}

/* The caller, the body and the trashed folder it names by id (_body_id),
 * owned or administered by the caller. */
static bool _begin_trashed(vf_req *x, void *ctx, http_req *req, http_resp *resp)
{
    if (!vf_req_begin(x, ctx, req, resp)) return false;
    char id[TS_UUID_STRLEN];
    if (!_body_id(x, id) || !vf_resolve_trashed(x->fr.s, &x->c, id, &x->f, resp)) return false;
    tlog_ctx_entity("folder", x->f.id);
    return true;
}

void vf_h_purge(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    PGconn *conn;
    if (_begin_trashed(&x, ctx, req, resp) && (conn = pgjson_get(x.fr.s, resp)) != NULL) {
        ts_err err = {{0}};
        if (_purge(x.fr.s, conn, x.f.id, x.f.name, x.f.host, x.c.user_id, req->request_id, &err))
            http_reply(resp, 204, NULL, NULL, 0);
        else
            http_problem(resp, 409, "conflict", NULL, "purge failed: %s", err.msg);
        pgjson_put(x.fr.s, conn);
    }
    vf_req_end(&x);
}

void vf_h_restore(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    PGconn *conn;
    if (!_begin_trashed(&x, ctx, req, resp) || !(conn = pgjson_get(x.fr.s, resp))) goto out;
    const char *p[] = {x.f.id};
    if (pgjson_begin(conn, resp)) {
        /* IS NOT DISTINCT FROM: a status test the partial index
         * vfolders_trash cannot answer, so the cached plan finds the
         * row by its id (an EXPLAIN of the generic plan of "status =
         * 'trash'" on an empty table reads vfolders_trash, then every
         * folder in the trash on each restore). */
        PGresult *r = pgjson_query(conn, resp, "restore vfolder",
                                   "UPDATE vfolder.vfolders SET status = 'ready',"
                                   " trashed_at = NULL WHERE id = $1::uuid AND"
                                   " status IS NOT DISTINCT FROM 'trash'",
                                   1, p);
        ts_err err = {{0}};
        bool ok = false;
        if (!r && http_resp_status(resp) == 409)
            http_problem(resp, 409, "already-exists", NULL,
                         "a vfolder named %s exists again: rename it first", x.f.name);
        else if (r && !vf_volume_restore(vf_volume_find(x.f.host), x.f.id, &err))
            http_problem(resp, 500, "internal-server-error", NULL, "%s", err.msg);
        else if (r)
            ok = pgjson_commit(conn, resp);
        PQclear(r);
        if (ok)
            http_reply(resp, 204, NULL, NULL, 0);
        else
            pg_rollback(conn);
    }
    pgjson_put(x.fr.s, conn);
out:
    vf_req_end(&x);
}

void vf_trash_sweep(svc *s)
{
    pg_pool *pool = svc_pg(s);
    ts_err err = {{0}};
    PGconn *conn = pool ? pg_pool_get(pool, 1000, &err) : NULL;
    if (!conn) return;
    char secs[32];
    snprintf(secs, sizeof(secs), "%" PRId64, vf_cfg.trash_retention_ms / 1000);
    const char *p[] = {secs};
    PGresult *r = PQexecParams(conn,
                               "SELECT id::text, name, host FROM vfolder.vfolders"
                               " WHERE status = 'trash' AND trashed_at <="
                               " now() - make_interval(secs => $1::double precision)"
                               " ORDER BY trashed_at LIMIT 100",
                               1, NULL, p, NULL, NULL, 0);
    if (PQresultStatus(r) == PGRES_TUPLES_OK) {
        for (int i = 0; i < PQntuples(r); i++) {
            tlog_ctx_entity("folder", PQgetvalue(r, i, 0));
            ts_err e = {{0}};
            if (!_purge(s, conn, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2),
                        NULL, NULL, &e))
                TLOG_WARN("purge failed", "error=\"%s\"", e.msg);
        }
        tlog_ctx_entity("folder", NULL);
    }
    PQclear(r);
    pg_pool_put(pool, conn);
}
