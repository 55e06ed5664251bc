/* session_lifetime.c: see session_lifetime.h. */
#include "session_lifetime.h"

#include "db_common.h"
#include "session_sweep.h"

#include <stdio.h>

/* RUNNING sessions past their lifetime's deadline (first RUNNING +
 * max_lifetime, db_common.h's SESSION_DEADLINES_SET), oldest first: the
 * partial index lists only the live sessions with a lifetime. */
static const char OVERDUE_SQL[] = "SELECT s.id::text, s.max_lifetime FROM registry.sessions s"
                                  " WHERE s.lifetime_deadline IS NOT NULL"
                                  " AND s.lifetime_deadline < now() AND s.status = 'RUNNING'"
                                  " ORDER BY s.lifetime_deadline LIMIT 100";

static void reason(const PGresult *r, int row, char *buf, size_t size)
{
    snprintf(buf, size, "session lifetime: ran more than %s s", PQgetvalue(r, row, 1));
}

static bool terminate(PGconn *conn, outbox *ob, sess *s, const char *why, ts_err *err)
{
    return tr_terminate(conn, ob, s, why, why, "registry", err);
}

bool session_lifetime_sweep(int *ended)
{
    /* it may have ended or be restarting since the query: only RUNNING ends here */
    static const session_sweep_spec spec = {.what = "session lifetime",
                                            .sql = OVERDUE_SQL,
                                            .status = ST_RUNNING,
                                            .done_msg = "session reached its lifetime",
                                            .reason = reason,
                                            .end = terminate};
    return session_sweep(&spec, ended);
}
