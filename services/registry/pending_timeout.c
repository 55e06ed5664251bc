/* pending_timeout.c: see pending_timeout.h. */
#include "pending_timeout.h"

#include "db_common.h"
#include "libcommon/log.h"
#include "transitions.h"

#include <stdio.h>
#include <string.h>

static const char *const OVERDUE_SQL =
    "SELECT s.id::text, g.pending_timeout, g.name FROM registry.sessions s"
    " JOIN registry.resource_groups g ON g.name = s.resource_group"
    " WHERE s.status = 'PENDING' AND g.pending_timeout > 0"
    " AND greatest(s.created_at, coalesce(s.starts_at, s.created_at))"
    "     < now() - make_interval(secs => g.pending_timeout)"
    " ORDER BY s.created_at LIMIT 100";

/* Cancel one session if it is still PENDING: true unless the database failed. */
static bool cancel_one(PGconn *conn, const char *sid, const char *timeout, const char *group,
                       bool *cancelled, ts_err *err)
{
    char reason[200];
    snprintf(reason, sizeof(reason), "pending timeout: waited more than %s s in resource group %s",
             timeout, group);
    outbox ob;
    ob_init(&ob, "");
    sess s;
    bool found = false;
    bool ok = pg_begin(conn, err) && tr_lock(conn, sid, &s, &found, err);
    /* the scheduler may have placed it since the SELECT: only PENDING ends here */
    *cancelled = ok && found && strcmp(s.status, ST_PENDING) == 0;
    if (*cancelled)
        ok = tr_end(conn, &ob, &s, ST_CANCELLED, reason, NULL, NULL, NULL, "registry", err);
    if (ok && pg_commit(conn, err)) {
        ob_flush(&ob);
        if (*cancelled) TLOG_INFO("pending session timed out", "reason=\"%s\"", reason);
        return true;
    }
    pg_rollback(conn);
    ob_discard(&ob);
    *cancelled = false;
    return false;
}

bool pending_timeout_sweep(int *cancelled)
{
    *cancelled = 0;
    ts_err err = {{0}};
    PGconn *conn = reg_pg_get(&err);
    if (!conn) return false;
    PGresult *r = reg_exec(conn, OVERDUE_SQL, 0, NULL, &err);
    bool ok = r != NULL;
    if (!r) TLOG_WARN("pending timeout: query failed", "error=\"%s\"", err.msg);
    for (int i = 0; r && i < PQntuples(r); i++) {
        bool done = false;
        tlog_ctx_session(PQgetvalue(r, i, 0));
        ok = cancel_one(conn, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2), &done,
                        &err);
        if (!ok) TLOG_WARN("pending timeout: cancel failed", "error=\"%s\"", err.msg);
        tlog_ctx_session(NULL);
        if (!ok) break;
        *cancelled += done;
    }
    if (r) PQclear(r);
    reg_pg_put(conn);
    return ok;
}
