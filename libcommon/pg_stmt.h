/* pg_stmt.h: statements prepared once per connection.
 *
 * PQexecParams sends an unnamed statement that the server parses and plans
 * on every call; for the short statements of the event handlers planning was
 * about 40% of PostgreSQL's time (pg_stat_statements, track_planning). A
 * connection with a statement cache attached prepares each distinct SQL text
 * once (named "ts<N>") and then only executes it. The cache lives with the
 * connection (libpq instance data): a reset connection starts empty, a
 * finished one frees it. At most PG_STMT_CACHE_MAX texts per connection;
 * past that, statements run unprepared. Off (pg.prepare = false, e.g. behind
 * a pooler that does not keep named statements), everything runs unprepared. */
#ifndef TESSERA_PG_STMT_H
#define TESSERA_PG_STMT_H

#include "libcommon/common.h"

#include <libpq-fe.h>

#define PG_STMT_CACHE_MAX 256

/* Give conn a statement cache (false: libpq refused the event procedure). */
bool pg_stmt_attach(PGconn *conn) TS_MUST_CHECK;

/* As PQexecParams (text parameters, text results), through the connection's
 * cache when it has one. The result may be an error result, as PQexecParams'.
 * Callers use pg_exec_cached (pg.h), which heals a broken connection. */
PGresult *pg_stmt_exec(PGconn *conn, const char *sql, int n, const char *const *params);

/* Whether conn has a statement cache. */
bool pg_stmt_attached(const PGconn *conn) TS_MUST_CHECK;
/* Statements prepared on conn so far (tests, metrics); 0 without a cache. */
int pg_stmt_count(const PGconn *conn);

#endif
