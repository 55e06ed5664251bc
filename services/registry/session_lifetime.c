/* session_lifetime.c: see session_lifetime.h. */
#include "session_lifetime.h"

#include "db_common.h"
#include "libcommon/log.h"
#include "transitions.h"

#include <stdio.h>
#include <string.h>

/* RUNNING sessions whose first RUNNING is older than their lifetime. */
static const char *const OVERDUE_SQL =
    "SELECT s.id::text, s.max_lifetime FROM registry.sessions s"
    " WHERE s.status = 'RUNNING' AND s.max_lifetime > 0"
    " AND (SELECT min(h.at) FROM registry.session_status_history h"
    "      WHERE h.session_id = s.id AND h.status = 'RUNNING')"
    "     < now() - make_interval(secs => s.max_lifetime)"
    " ORDER BY s.created_at LIMIT 100";

/* Terminate one session if it is still running: true unless the database failed. */
static bool end_one(PGconn *conn, const char *sid, const char *lifetime, bool *ended, ts_err *err)
{
    char reason[120];
    snprintf(reason, sizeof(reason), "session lifetime: ran more than %s s", lifetime);
    outbox ob;
    ob_init(&ob, "");
    sess s;
    bool found = false;
    bool ok = pg_begin(conn, err) && tr_lock(conn, sid, &s, &found, err);
    /* it may have ended or be restarting since the SELECT */
    *ended = ok && found && strcmp(s.status, ST_RUNNING) == 0;
    if (*ended) ok = tr_terminate(conn, &ob, &s, reason, reason, "registry", err);
    if (ok && pg_commit(conn, err)) {
        ob_flush(&ob);
        if (*ended) TLOG_INFO("session reached its lifetime", "reason=\"%s\"", reason);
        return true;
    }
    pg_rollback(conn);
    ob_discard(&ob);
    *ended = false;
    return false;
}

bool session_lifetime_sweep(int *ended)
{
    *ended = 0;
    ts_err err = {{0}};
    PGconn *conn = reg_pg_get(&err);
    if (!conn) return false;
    PGresult *r = reg_exec(conn, OVERDUE_SQL, 0, NULL, &err);
    bool ok = r != NULL;
    if (!r) TLOG_WARN("session lifetime: query failed", "error=\"%s\"", err.msg);
    for (int i = 0; r && i < PQntuples(r); i++) {
        bool done = false;
        tlog_ctx_session(PQgetvalue(r, i, 0));
        ok = end_one(conn, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), &done, &err);
        if (!ok) TLOG_WARN("session lifetime: terminate failed", "error=\"%s\"", err.msg);
        tlog_ctx_session(NULL);
        if (!ok) break;
        *ended += done;
    }
    if (r) PQclear(r);
    reg_pg_put(conn);
    return ok;
}
