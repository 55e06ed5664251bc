/* session_sweep.h: the housekeeping's sweeps that end overdue sessions
 * (pending_timeout.c, session_lifetime.c, idle_network.c) share this loop: one query lists
 * the candidates, and each is ended in its own transaction under its row
 * lock, only if it is still in the status the sweep looks for (the scheduler
 * or a user may have moved it since the query) and, when the sweep says how,
 * still due. */
#ifndef REGISTRY_SESSION_SWEEP_H
#define REGISTRY_SESSION_SWEEP_H

#include "transitions.h"

#include <libpq-fe.h>

typedef struct session_sweep_spec {
    const char *what;     /* in log lines: "pending timeout" */
    const char *sql;      /* the session id first, then what reason() reads */
    const char *status;   /* only a session still in this status is ended */
    const char *done_msg; /* logged with the reason for each session ended */
    /* The reason for row's session (status_info of its end). */
    void (*reason)(const PGresult *r, int row, char *buf, size_t size);
    /* Optional: whether s, locked in the open transaction, is still due (the
     * query's answer may be stale); it may write (push a deadline) when not. */
    bool (*due)(PGconn *conn, sess *s, bool *due, ts_err *err);
    /* End s inside the open transaction. */
    bool (*end)(PGconn *conn, outbox *ob, sess *s, const char *reason, ts_err *err);
} session_sweep_spec;

/* Run the query and end each session it lists (*ended: how many); false on
 * a database error (logged). */
bool session_sweep(const session_sweep_spec *spec, int *ended) TS_MUST_CHECK;

#endif
