/* session_sweep.c: see session_sweep.h. */
#include "session_sweep.h"

#include "db_common.h"
#include "libcommon/log.h"

#include <string.h>

/* End one session if it is still in spec->status: true unless the database failed. */
static bool end_one(const session_sweep_spec *spec, PGconn *conn, const char *sid,
                    const char *reason, bool *ended, ts_err *err)
{
    outbox ob;
    ob_init(&ob, "");
    sess s;
    bool found = false;
    bool ok = pg_begin(conn, err) && tr_lock(conn, sid, &s, &found, err);
    *ended = ok && found && strcmp(s.status, spec->status) == 0;
    if (*ended && spec->due) ok = spec->due(conn, &s, ended, err);
    *ended = *ended && ok;
    if (*ended) ok = spec->end(conn, &ob, &s, reason, err);
    if (ok && pg_commit(conn, err)) {
        ob_flush(&ob);
        if (*ended) TLOG_INFO(spec->done_msg, "reason=\"%s\"", reason);
        return true;
    }
    pg_rollback(conn);
    ob_discard(&ob);
    *ended = false;
    return false;
}

bool session_sweep(const session_sweep_spec *spec, int *ended)
{
    *ended = 0;
    ts_err err = {{0}};
    PGconn *conn = reg_pg_get(&err);
    if (!conn) return false;
    PGresult *r = reg_exec(conn, spec->sql, 0, NULL, &err);
    bool ok = r != NULL;
    if (!r) TLOG_WARN("sweep query failed", "sweep=\"%s\" error=\"%s\"", spec->what, err.msg);
    for (int i = 0; r && i < PQntuples(r); i++) {
        char reason[200];
        spec->reason(r, i, reason, sizeof(reason));
        bool done = false;
        tlog_ctx_session(PQgetvalue(r, i, 0));
        ok = end_one(spec, conn, PQgetvalue(r, i, 0), reason, &done, &err);
        if (!ok) TLOG_WARN("sweep failed", "sweep=\"%s\" error=\"%s\"", spec->what, err.msg);
        tlog_ctx_session(NULL);
        if (!ok) break;
        *ended += done;
    }
    if (r) PQclear(r);
    reg_pg_put(conn);
    return ok;
}
