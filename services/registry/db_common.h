/* db_common.h: the session statuses, and database and Redis helpers for the
 * registry's code that is not an HTTP handler (event consumers, periodic
 * work; HTTP handlers use libcommon/pgjson.h), on the service's pool and
 * Redis connection (context.h). */
#ifndef REGISTRY_DB_COMMON_H
#define REGISTRY_DB_COMMON_H

#include "libcommon/svc.h"

/* Session statuses (sessions.status). */
#define ST_PENDING "PENDING"
#define ST_SCHEDULED "SCHEDULED"
#define ST_PREPARING "PREPARING"
#define ST_PULLING "PULLING"
#define ST_RUNNING "RUNNING"
#define ST_RESTARTING "RESTARTING"
#define ST_TERMINATING "TERMINATING"
#define ST_TERMINATED "TERMINATED"
#define ST_CANCELLED "CANCELLED"
#define ST_ERROR "ERROR"
/* SQL lists. */
#define SQL_FINAL "('TERMINATED', 'CANCELLED', 'ERROR')"

/* The deadlines a status change of registry.sessions to the status the SQL expression st names
 * implies, as a SET clause. Every statement that moves a session to or from RUNNING or to a
 * final status includes it (tr_set, kernel_steps.c's batch RUNNING):
 *   idle_deadline      (idle_network.h) counts from each RUNNING, NULL in any other status
 *   lifetime_deadline  (session_lifetime.h) the first RUNNING + max_lifetime, kept through
 *                      restarts, NULL once final */
#define SESSION_DEADLINES_SET(st)                                                                  \
    "idle_deadline = CASE WHEN " st " = 'RUNNING' AND type <> 'batch'"                             \
    " AND idle_timeout > 0 THEN now() + make_interval(secs => idle_timeout) END,"                  \
    " lifetime_deadline = CASE WHEN " st " IN " SQL_FINAL " THEN NULL"                             \
    " WHEN " st " = 'RUNNING' AND max_lifetime > 0"                                                \
    " THEN coalesce(lifetime_deadline, now() + make_interval(secs => max_lifetime))"               \
    " ELSE lifetime_deadline END"

/* TERMINATED, CANCELLED or ERROR (of a session or a kernel). */
bool reg_status_final(const char *status) TS_MUST_CHECK;

/* A pooled connection (waits up to 5 s) or NULL with err. */
PGconn *reg_pg_get(ts_err *err);
void reg_pg_put(PGconn *conn);
/* pg_exec_cached (PQexecParams through the connection's statement cache);
 * NULL with err (the SQLSTATE at the start of its message) on failure. */
PGresult *reg_exec(PGconn *conn, const char *sql, int n, const char *const *params, ts_err *err);
/* reg_exec without the statement cache: planned at each call, for the
 * table sizes of now. For the statements that join a batch's rows to a
 * table: a plan cached while the table was small reads all of it later. */
PGresult *reg_exec_planned(PGconn *conn, const char *sql, int n, const char *const *params,
                           ts_err *err);
/* A uuid[] literal, {id,id,...}, of n ids the caller checked are UUIDs
 * (ts_uuid_valid); free() it. */
char *reg_uuid_array(const char *const *ids, size_t n);
/* Like reg_exec for statements whose result is not needed. */
bool reg_run(PGconn *conn, const char *sql, int n, const char *const *params,
             ts_err *err) TS_MUST_CHECK;

/* The thread's Redis connection (svc_redis). */
rds *reg_redis(ts_err *err);

#endif
