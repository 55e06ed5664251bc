/* pg.h: PostgreSQL through libpq: connect with backoff, a small connection
 * pool, per-service schema migrations, transactions. */
#ifndef TESSERA_PG_H
#define TESSERA_PG_H

#include "libcommon/common.h"

#include <libpq-fe.h>
#include <stdio.h>

/* One embedded migration: version is the number in its file name
 * (0001_init.sql -> 1). tools/embed-migrations.sh generates, for a service with
 * services/<name>/migrations/, a table `const pg_migration <name>_migrations[]`
 * terminated by {0}, and `const size_t <name>_migrations_count`. */
typedef struct pg_migration {
    int version;
    const char *name; /* file name */
    const char *sql;
} pg_migration;

/* Connect, retrying with exponential backoff (100 ms doubling, capped at 2 s)
 * until max_wait_ms has passed. */
PGconn *pg_connect_backoff(const char *dsn, int max_wait_ms, ts_err *err);

/* Create schema `schema` if needed and apply, in version order, the migrations
 * not yet recorded in <schema>.schema_migrations, each in its own transaction,
 * under an advisory lock so concurrent instances apply each exactly once. */
bool pg_migrate(PGconn *conn, const char *schema, const pg_migration *migrations, size_t n,
                ts_err *err) TS_MUST_CHECK;

/* As PQexecParams (text parameters, text results), through the connection's
 * statement cache when it has one (pg_stmt.h). The result may be an error
 * result, as PQexecParams'. A statement that broke on a dead connection is
 * run once more on a new one when that is safe (pg_after_statement). */
PGresult *pg_exec_cached(PGconn *conn, const char *sql, int n, const char *const *params);

/* Run one statement that returns no rows (or whose rows are ignored). */
bool pg_exec(PGconn *conn, const char *sql, ts_err *err) TS_MUST_CHECK;
bool pg_begin(PGconn *conn, ts_err *err) TS_MUST_CHECK;
bool pg_commit(PGconn *conn, ts_err *err) TS_MUST_CHECK;
void pg_rollback(PGconn *conn);

/* ---- healing ----
 * A connection the server closed or that broke under a statement is reset
 * (PQreset: a new server session, an empty statement cache), and the outage
 * is noted in deps.h so that HTTP answers 503 and bus consumers pause. */

/* True when r failed because the server is unreachable or refusing work
 * (the connection is broken, or SQLSTATE class 08, 57P01-03, 53300), not
 * because of the statement: the caller answers 503 / retries later. */
bool pg_unavailable(PGconn *conn, const PGresult *r) TS_MUST_CHECK;
/* Reset conn; false (err set, may be NULL) when the server still refuses. */
bool pg_reconnect(PGconn *conn, ts_err *err) TS_MUST_CHECK;
/* After a statement sql that failed with result r, issued when the
 * connection's transaction status was before (PQtransactionStatus): notes
 * the server's state, and when the connection broke outside a transaction
 * and sql is safe to run again (SELECT, BEGIN, START, SHOW, VALUES), resets
 * the connection and returns true: run sql once more. pg_exec and
 * pg_exec_cached do this themselves. */
bool pg_after_statement(PGconn *conn, const char *sql, int before, const PGresult *r) TS_MUST_CHECK;
/* Prometheus text: reconnects, failed reconnects, stale connections found,
 * retried statements (metrics.h collector). */
void pg_collect(FILE *out, void *ctx);

/* A fixed-size pool. Before a connection is lent, a poll(2) of its socket
 * finds one the server closed while it was idle; it is reset then (and a
 * broken one on the next get). */
typedef struct pg_pool pg_pool;
/* prepare: each connection gets a statement cache (pg_stmt.h). */
pg_pool *pg_pool_new(const char *dsn, int size, int connect_wait_ms, bool prepare, ts_err *err);
void pg_pool_free(pg_pool *p);
/* Blocks until a connection is free or timeout_ms passes (NULL, err set). */
PGconn *pg_pool_get(pg_pool *p, int timeout_ms, ts_err *err);
void pg_pool_put(pg_pool *p, PGconn *conn);
/* SELECT 1 on a pooled connection (used by /readyz). */
bool pg_pool_ping(pg_pool *p, ts_err *err) TS_MUST_CHECK;

#endif
