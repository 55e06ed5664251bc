/* pg.h: PostgreSQL through libpq: connect with backoff, a small connection
 * pool, per-service schema migrations, transactions. */
#ifndef TESSERA_PG_H
#define TESSERA_PG_H

#include "libcommon/common.h"

#include <libpq-fe.h>

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

/* Run one statement that returns no rows (or whose rows are ignored). */
bool pg_exec(PGconn *conn, const char *sql, ts_err *err) TS_MUST_CHECK;
bool pg_begin(PGconn *conn, ts_err *err) TS_MUST_CHECK;
bool pg_commit(PGconn *conn, ts_err *err) TS_MUST_CHECK;
void pg_rollback(PGconn *conn);

/* A fixed-size pool; connections found broken are reset on the next get. */
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
