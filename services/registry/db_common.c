/* db_common.c: statuses, database and Redis helpers (see db_common.h). */
#include "db_common.h"

#include "context.h"

#include "libcommon/log.h"
#include "libcommon/pg.h"

#include <string.h>

bool reg_status_final(const char *status)
{
    return strcmp(status, ST_TERMINATED) == 0 || strcmp(status, ST_CANCELLED) == 0 ||
           strcmp(status, ST_ERROR) == 0;
}

PGconn *reg_pg_get(ts_err *err)
{
    pg_pool *pool = svc_pg(reg_service());
    if (!pool) {
        ts_err_set(err, "the database is not connected yet");
        return NULL;
    }
    return pg_pool_get(pool, 5000, err);
}

void reg_pg_put(PGconn *conn)
{
    if (conn) pg_pool_put(svc_pg(reg_service()), conn);
}

static PGresult *checked(PGresult *r, ts_err *err)
{
    ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) return r;
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    ts_err_set(err, "database: %s%s%s", state ? state : "", state ? " " : "",
               PQresultErrorMessage(r));
    /* One line: drop the trailing newline libpq adds. */
    size_t n_msg = strlen(err ? err->msg : "");
    if (err && n_msg && err->msg[n_msg - 1] == '\n') err->msg[n_msg - 1] = '\0';
    PQclear(r);
    return NULL;
}

PGresult *reg_exec(PGconn *conn, const char *sql, int n, const char *const *params, ts_err *err)
{
    return checked(pg_exec_cached(conn, sql, n, params), err);
}

PGresult *reg_exec_planned(PGconn *conn, const char *sql, int n, const char *const *params,
                           ts_err *err)
{
    return checked(PQexecParams(conn, sql, n, NULL, params, NULL, NULL, 0), err);
}

char *reg_uuid_array(const char *const *ids, size_t n)
{
    char *arr = ts_malloc(n * TS_UUID_STRLEN + 3), *q = arr;
    *q++ = '{';
    for (size_t i = 0; i < n; i++) {
        size_t l = strnlen(ids[i], TS_UUID_STRLEN - 1);
        if (i) *q++ = ',';
        memcpy(q, ids[i], l);
        q += l;
    }
    strcpy(q, "}");
    return arr;
}

bool reg_run(PGconn *conn, const char *sql, int n, const char *const *params, ts_err *err)
{
    PGresult *r = reg_exec(conn, sql, n, params, err);
    if (!r) return false;
    PQclear(r);
    return true;
}

rds *reg_redis(ts_err *err)
{
    return svc_redis(reg_service(), err);
}
