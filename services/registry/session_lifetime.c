/* session_lifetime.c: see session_lifetime.h. */
#include "session_lifetime.h"

#include "db_common.h"
#include "session_sweep.h"

#include <stdio.h>

/* RUNNING sessions whose first RUNNING is older than their lifetime. */
static const char OVERDUE_SQL[] = "SELECT s.id::text, s.max_lifetime FROM registry.sessions s"
                                  " WHERE s.status = 'RUNNING' AND s.max_lifetime > 0"
                                  " AND (SELECT min(h.at) FROM registry.session_status_history h"
                                  "      WHERE h.session_id = s.id AND h.status = 'RUNNING')"
                                  "     < now() - make_interval(secs => s.max_lifetime)"
                                  " ORDER BY s.created_at LIMIT 100";

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
