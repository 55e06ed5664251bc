/* pending_timeout.c: see pending_timeout.h. */
#include "pending_timeout.h"

#include "db_common.h"
#include "session_sweep.h"

#include <stdio.h>

static const char OVERDUE_SQL[] =
    "SELECT s.id::text, g.pending_timeout, g.name FROM registry.sessions s"
    " JOIN registry.resource_groups g ON g.name = s.resource_group"
    " WHERE s.status = 'PENDING' AND g.pending_timeout > 0"
    " AND greatest(s.created_at, coalesce(s.starts_at, s.created_at))"
    "     < now() - make_interval(secs => g.pending_timeout)"
    " ORDER BY s.created_at LIMIT 100";

static void reason(const PGresult *r, int row, char *buf, size_t size)
{
    snprintf(buf, size, "pending timeout: waited more than %s s in resource group %s",
             PQgetvalue(r, row, 1), PQgetvalue(r, row, 2));
}

static bool cancel(PGconn *conn, outbox *ob, sess *s, const char *why, ts_err *err)
{
    return tr_end(conn, ob, s, ST_CANCELLED, why, NULL, NULL, NULL, "registry", err);
}

bool pending_timeout_sweep(int *cancelled)
{
    /* the scheduler may have placed it since the query: only PENDING ends here */
    static const session_sweep_spec spec = {.what = "pending timeout",
                                            .sql = OVERDUE_SQL,
                                            .status = ST_PENDING,
                                            .done_msg = "pending session timed out",
                                            .reason = reason,
                                            .end = cancel};
    return session_sweep(&spec, cancelled);
}
