/* pg.c: PostgreSQL through libpq: connect with backoff, migrations,
 * transactions and a fixed-size connection pool (see pg.h). */
#include "libcommon/pg.h"

#include "libcommon/deps.h"
#include "libcommon/log.h"
#include "libcommon/metrics.h"
#include "libcommon/pg_stmt.h"

#include <ctype.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- errors ------------------------------------------------------------------------ */

/* libpq's message on one line, with the DSN's password (if any) masked. */
static void clean_message(const char *msg, const char *password, char *out, size_t size)
{
    size_t o = 0, plen = password ? strlen(password) : 0;
    for (const char *p = msg ? msg : ""; *p && o + 1 < size;) {
        if (plen && strncmp(p, password, plen) == 0) {
            for (const char *m = "***"; *m && o + 1 < size; m++)
                out[o++] = *m;
            p += plen;
            continue;
        }
        out[o++] = (*p == '\n' || *p == '\r' || *p == '\t') ? ' ' : *p;
        p++;
    }
    while (o > 0 && out[o - 1] == ' ')
        o--;
    out[o] = '\0';
}

/* The primary message of a failed result (or the connection's message). */
static void result_error(PGconn *conn, const PGresult *res, char *out, size_t size)
{
    const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    if (primary && *primary)
        clean_message(primary, NULL, out, size);
    else
        clean_message(res ? PQresultErrorMessage(res) : PQerrorMessage(conn), NULL, out, size);
    if (!out[0]) clean_message(PQerrorMessage(conn), NULL, out, size);
    if (!out[0]) snprintf(out, size, "unknown error");
}

static bool result_ok(const PGresult *res)
{
    ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_EMPTY_QUERY;
}

/* ---- healing ------------------------------------------------------------------------------ */

static _Atomic uint64_t g_reconnects, g_reconnect_failures, g_retries, g_stale_found;

bool pg_unavailable(PGconn *conn, const PGresult *res)
{
    if (!conn || PQstatus(conn) != CONNECTION_OK) return true;
    const char *st = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (!st) return false;
    /* 08: connection exceptions; 57P01-03: admin/crash shutdown, cannot
     * connect now; 53300: too many connections. */
    return strncmp(st, "08", 2) == 0 || strncmp(st, "57P0", 4) == 0 || strcmp(st, "53300") == 0;
}

bool pg_reconnect(PGconn *conn, ts_err *err)
{
    PQreset(conn);
    if (PQstatus(conn) == CONNECTION_OK) {
        atomic_fetch_add(&g_reconnects, 1);
        deps_answered(DEP_POSTGRESQL);
        return true;
    }
    atomic_fetch_add(&g_reconnect_failures, 1);
    char reason[512];
    clean_message(PQerrorMessage(conn), NULL, reason, sizeof(reason));
    deps_failed(DEP_POSTGRESQL, reason);
    ts_err_set(err, "reconnect to PostgreSQL failed: %s", reason);
    return false;
}

/* Statements that change nothing, or start a transaction: running one again
 * after the connection broke under it cannot apply anything twice. */
static bool retry_safe(const char *sql)
{
    while (*sql && isspace((unsigned char)*sql))
        sql++;
    static const char *const safe[] = {"SELECT", "BEGIN", "START", "SHOW", "VALUES", NULL};
    for (const char *const *k = safe; *k; k++) {
        size_t n = strlen(*k);
        if (strncasecmp(sql, *k, n) == 0 && !isalnum((unsigned char)sql[n])) return true;
    }
    return false;
}

bool pg_after_statement(PGconn *conn, const char *sql, int before, const PGresult *res)
{
    if (PQstatus(conn) == CONNECTION_OK) {
        /* The server answered (an error result is the statement's own). */
        if (!pg_unavailable(conn, res)) deps_answered(DEP_POSTGRESQL);
        return false;
    }
    char reason[512];
    clean_message(PQerrorMessage(conn), NULL, reason, sizeof(reason));
    deps_failed(DEP_POSTGRESQL, reason);
    if (before != PQTRANS_IDLE || !retry_safe(sql)) return false;
    if (!pg_reconnect(conn, NULL)) return false;
    atomic_fetch_add(&g_retries, 1);
    TLOG_INFO("postgres statement retried on a new connection", "error=\"%s\"", reason);
    return true;
}

/* A pooled connection the server has closed while it sat idle (a restart,
 * an idle timeout, a terminated backend) has something to read: the FATAL
 * notice and the end of the stream. One poll(2) finds it before a caller's
 * statement would fail on it. */
static bool conn_stale(PGconn *conn)
{
    if (PQstatus(conn) != CONNECTION_OK) return true;
    int fd = PQsocket(conn);
    if (fd < 0) return true;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) return true;
    if (!PQconsumeInput(conn)) return true;
    PGnotify *n;
    while ((n = PQnotifies(conn)) != NULL)
        PQfreemem(n);
    return PQstatus(conn) != CONNECTION_OK;
}

void pg_collect(FILE *out, void *ctx)
{
    (void)ctx;
    metrics_counter(out, "tessera_pg_reconnects_total",
                    "pooled PostgreSQL connections re-established after they broke",
                    atomic_load(&g_reconnects));
    metrics_counter(out, "tessera_pg_reconnect_failures_total",
                    "attempts to re-establish a broken PostgreSQL connection that failed",
                    atomic_load(&g_reconnect_failures));
    metrics_counter(out, "tessera_pg_stale_connections_total",
                    "pooled connections found closed by the server before reuse",
                    atomic_load(&g_stale_found));
    metrics_counter(out, "tessera_pg_statement_retries_total",
                    "read-only statements run again after their connection broke",
                    atomic_load(&g_retries));
}

/* ---- connect ------------------------------------------------------------------------- */

/* The password and a loggable "host:port/db" of a DSN (either may be left empty). */
static void dsn_parts(const char *dsn, char *password, size_t psize, char *target, size_t tsize)
{
    password[0] = target[0] = '\0';
    PQconninfoOption *opts = PQconninfoParse(dsn, NULL);
    if (!opts) return;
    const char *host = NULL, *port = NULL, *db = NULL;
    for (PQconninfoOption *o = opts; o->keyword; o++) {
        if (!o->val) continue;
        if (strcmp(o->keyword, "password") == 0) ts_strlcpy(password, o->val, psize);
        if (strcmp(o->keyword, "host") == 0) host = o->val;
        if (strcmp(o->keyword, "port") == 0) port = o->val;
        if (strcmp(o->keyword, "dbname") == 0) db = o->val;
    }
    snprintf(target, tsize, "%s:%s/%s", host ? host : "", port ? port : "", db ? db : "");
    PQconninfoFree(opts);
}

/* Server notices (e.g. "already exists, skipping") go to the log, not stderr. */
static void log_notice(void *arg, const char *message)
{
    (void)arg;
    char msg[512], q[600];
    clean_message(message, NULL, msg, sizeof(msg));
    TLOG_DEBUG("postgres notice", "notice=%s", tlog_quote(q, sizeof(q), msg));
}

static void sleep_ms(int64_t ms)
{
    if (ms <= 0) return;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

PGconn *pg_connect_backoff(const char *dsn, int max_wait_ms, ts_err *err)
{
    if (!dsn) {
        ts_err_set(err, "no PostgreSQL DSN");
        return NULL;
    }
    char password[256], target[256], reason[512];
    dsn_parts(dsn, password, sizeof(password), target, sizeof(target));
    int64_t start = ts_now_mono_ms(), deadline = start + (max_wait_ms > 0 ? max_wait_ms : 0);
    int64_t delay = 100;
    for (int attempt = 1;; attempt++) {
        /* Bound each attempt by what is left of the wait (libpq's minimum is 2 s). */
        int64_t left = deadline - ts_now_mono_ms();
        char timeout[32];
        snprintf(timeout, sizeof(timeout), "%lld",
                 (long long)(left > 2000 ? (left + 999) / 1000 : 2));
        /* TCP keepalives and a send timeout (before dbname: the DSN may
         * override them) so a server that vanished without closing its
         * sockets breaks a statement within seconds instead of hanging it. */
        const char *keys[] = {
            "keepalives",       "keepalives_idle", "keepalives_interval", "keepalives_count",
            "tcp_user_timeout", "dbname",          "connect_timeout",     NULL};
        const char *vals[] = {"1", "10", "5", "3", "15000", dsn, timeout, NULL};
        PGconn *conn = PQconnectdbParams(keys, vals, 1);
        if (conn && PQstatus(conn) == CONNECTION_OK) {
            PQsetNoticeProcessor(conn, log_notice, NULL);
            deps_answered(DEP_POSTGRESQL);
            if (attempt > 1)
                TLOG_INFO("postgres connected", "target=%s attempts=%d", target, attempt);
            return conn;
        }
        clean_message(conn ? PQerrorMessage(conn) : "out of memory", password, reason,
                      sizeof(reason));
        PQfinish(conn);
        deps_failed(DEP_POSTGRESQL, reason);
        left = deadline - ts_now_mono_ms();
        if (left <= 0) {
            ts_err_set(err, "cannot connect to PostgreSQL %s after %d attempts in %lld ms: %s",
                       target, attempt, (long long)(ts_now_mono_ms() - start), reason);
            return NULL;
        }
        char q[600];
        TLOG_WARN("postgres connect failed", "target=%s attempt=%d retry_in_ms=%lld error=%s",
                  target, attempt, (long long)(delay < left ? delay : left),
                  tlog_quote(q, sizeof(q), reason));
        sleep_ms(delay < left ? delay : left);
        delay = delay * 2 > 2000 ? 2000 : delay * 2;
    }
}

/* ---- statements and transactions --------------------------------------------------------- */

PGresult *pg_exec_cached(PGconn *conn, const char *sql, int n, const char *const *params)
{
    int before = PQtransactionStatus(conn);
    PGresult *r = pg_stmt_exec(conn, sql, n, params);
    ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) return r;
    if (pg_after_statement(conn, sql, before, r)) {
        PQclear(r);
        r = pg_stmt_exec(conn, sql, n, params);
    }
    return r;
}

bool pg_exec(PGconn *conn, const char *sql, ts_err *err)
{
    if (!conn) {
        ts_err_set(err, "no PostgreSQL connection");
        return false;
    }
    int before = PQtransactionStatus(conn);
    PGresult *res = PQexec(conn, sql);
    bool ok = result_ok(res);
    if (!ok && pg_after_statement(conn, sql, before, res)) {
        PQclear(res);
        res = PQexec(conn, sql);
        ok = result_ok(res);
    }
    if (!ok) {
        char msg[400];
        result_error(conn, res, msg, sizeof(msg));
        ts_err_set(err, "%s", msg);
    }
    PQclear(res);
    return ok;
}

bool pg_begin(PGconn *conn, ts_err *err)
{
    return pg_exec(conn, "BEGIN", err);
}

bool pg_commit(PGconn *conn, ts_err *err)
{
    return pg_exec(conn, "COMMIT", err);
}

void pg_rollback(PGconn *conn)
{
    if (conn) PQclear(PQexec(conn, "ROLLBACK"));
}

/* ---- migrations ------------------------------------------------------------------------ */

static bool exec_params(PGconn *conn, const char *sql, int n, const char *const *params,
                        PGresult **out, ts_err *err)
{
    PGresult *res = PQexecParams(conn, sql, n, NULL, params, NULL, NULL, 0);
    if (!result_ok(res)) {
        char msg[400];
        result_error(conn, res, msg, sizeof(msg));
        ts_err_set(err, "%s", msg);
        PQclear(res);
        return false;
    }
    if (out)
        *out = res;
    else
        PQclear(res);
    return true;
}

static int cmp_migration(const void *a, const void *b)
{
    const pg_migration *x = *(const pg_migration *const *)a, *y = *(const pg_migration *const *)b;
    return (x->version > y->version) - (x->version < y->version);
}

static bool apply_one(PGconn *conn, const char *qschema, const pg_migration *m, ts_err *err)
{
    char *set_path = ts_asprintf("SET LOCAL search_path TO %s", qschema);
    char *record =
        ts_asprintf("INSERT INTO %s.schema_migrations (version, name) VALUES ($1, $2)", qschema);
    char version[16];
    snprintf(version, sizeof(version), "%d", m->version);
    const char *params[2] = {version, m->name};
    bool ok = pg_begin(conn, err) && pg_exec(conn, set_path, err) && pg_exec(conn, m->sql, err) &&
              exec_params(conn, record, 2, params, NULL, err) && pg_commit(conn, err);
    if (!ok) {
        pg_rollback(conn);
        ts_err_prefix(err, "migration %s", m->name);
    }
    free(set_path);
    free(record);
    return ok;
}

/* With the advisory lock held: create the bookkeeping, apply what is missing. */
static bool migrate_locked(PGconn *conn, const char *schema, const char *qschema,
                           const pg_migration **sorted, size_t n, ts_err *err)
{
    char *sql = ts_asprintf("CREATE SCHEMA IF NOT EXISTS %s", qschema);
    bool ok = pg_exec(conn, sql, err);
    free(sql);
    if (!ok) return false;
    sql = ts_asprintf("CREATE TABLE IF NOT EXISTS %s.schema_migrations ("
                      "version int PRIMARY KEY, name text NOT NULL, "
                      "applied_at timestamptz NOT NULL DEFAULT now())",
                      qschema);
    ok = pg_exec(conn, sql, err);
    free(sql);
    if (!ok) return false;

    PGresult *res = NULL;
    sql = ts_asprintf("SELECT version FROM %s.schema_migrations", qschema);
    ok = exec_params(conn, sql, 0, NULL, &res, err);
    free(sql);
    if (!ok) return false;
    int rows = PQntuples(res);
    int applied = 0;
    for (size_t i = 0; ok && i < n; i++) {
        bool done = false;
        for (int r = 0; r < rows && !done; r++)
            done = atoi(PQgetvalue(res, r, 0)) == sorted[i]->version;
        if (done) continue;
        int64_t t0 = ts_now_mono_ms();
        ok = apply_one(conn, qschema, sorted[i], err);
        if (ok) {
            applied++;
            TLOG_INFO("migration applied", "schema=%s version=%d name=%s ms=%lld", schema,
                      sorted[i]->version, sorted[i]->name, (long long)(ts_now_mono_ms() - t0));
        }
    }
    PQclear(res);
    if (ok && applied == 0) TLOG_DEBUG("migrations up to date", "schema=%s", schema);
    return ok;
}

bool pg_migrate(PGconn *conn, const char *schema, const pg_migration *migrations, size_t n,
                ts_err *err)
{
    if (!conn || !schema || !*schema || (n && !migrations)) {
        ts_err_set(err, "migrate: invalid arguments");
        return false;
    }
    const pg_migration **sorted = ts_calloc(n ? n : 1, sizeof(*sorted));
    for (size_t i = 0; i < n; i++) {
        if (!migrations[i].name || !migrations[i].sql || migrations[i].version <= 0) {
            ts_err_set(err, "migrate: migration %zu is incomplete", i);
            free(sorted);
            return false;
        }
        sorted[i] = &migrations[i];
    }
    qsort(sorted, n, sizeof(*sorted), cmp_migration);
    for (size_t i = 1; i < n; i++) {
        if (sorted[i]->version == sorted[i - 1]->version) {
            ts_err_set(err, "migrate: %s and %s have the same version %d", sorted[i - 1]->name,
                       sorted[i]->name, sorted[i]->version);
            free(sorted);
            return false;
        }
    }
    char *qschema = PQescapeIdentifier(conn, schema, strlen(schema));
    if (!qschema) {
        char msg[400];
        clean_message(PQerrorMessage(conn), NULL, msg, sizeof(msg));
        ts_err_set(err, "migrate: bad schema name: %s", msg);
        free(sorted);
        return false;
    }
    const char *lock_params[1] = {schema};
    bool ok = exec_params(conn, "SELECT pg_advisory_lock(hashtext('tessera.migrate.' || $1))", 1,
                          lock_params, NULL, err);
    if (ok) {
        ok = migrate_locked(conn, schema, qschema, sorted, n, err);
        ts_err ignored;
        if (!exec_params(conn, "SELECT pg_advisory_unlock(hashtext('tessera.migrate.' || $1))", 1,
                         lock_params, NULL, &ignored))
            TLOG_WARN("migration unlock failed", "schema=%s error=\"%s\"", schema, ignored.msg);
    } else {
        ts_err_prefix(err, "migrate: advisory lock");
    }
    PQfreemem(qschema);
    free(sorted);
    return ok;
}

/* ---- pool -------------------------------------------------------------------------------- */

struct pg_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *dsn;
    int size;
    PGconn **conns;
    bool *busy;
};

pg_pool *pg_pool_new(const char *dsn, int size, int connect_wait_ms, bool prepare, ts_err *err)
{
    if (!dsn || size <= 0) {
        ts_err_set(err, "pool: need a DSN and a size of at least 1");
        return NULL;
    }
    pg_pool *p = ts_calloc(1, sizeof(*p));
    p->dsn = ts_strdup(dsn);
    p->size = size;
    p->conns = ts_calloc((size_t)size, sizeof(*p->conns));
    p->busy = ts_calloc((size_t)size, sizeof(*p->busy));
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    for (int i = 0; i < size; i++) {
        /* The first connection waits for the server; the rest find it up. */
        p->conns[i] = pg_connect_backoff(dsn, i == 0 ? connect_wait_ms : 2000, err);
        if (!p->conns[i]) {
            ts_err_prefix(err, "pool");
            pg_pool_free(p);
            return NULL;
        }
        if (prepare && !pg_stmt_attach(p->conns[i]))
            TLOG_WARN("postgres statement cache not attached", "slot=%d", i);
    }
    return p;
}

void pg_pool_free(pg_pool *p)
{
    if (!p) return;
    for (int i = 0; i < p->size; i++) {
        if (p->busy[i]) TLOG_WARN("pool freed with a connection in use", "slot=%d", i);
        PQfinish(p->conns[i]);
    }
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->conns);
    free(p->busy);
    free(p->dsn);
    free(p);
}

PGconn *pg_pool_get(pg_pool *p, int timeout_ms, ts_err *err)
{
    if (!p) {
        ts_err_set(err, "pool: no pool");
        return NULL;
    }
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    int64_t ns = until.tv_nsec + (int64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000LL;
    until.tv_sec += ns / 1000000000LL;
    until.tv_nsec = ns % 1000000000LL;

    pthread_mutex_lock(&p->mu);
    int slot = -1;
    for (;;) {
        for (int i = 0; i < p->size && slot < 0; i++)
            if (!p->busy[i]) slot = i;
        if (slot >= 0) break;
        if (pthread_cond_timedwait(&p->cv, &p->mu, &until) != 0) {
            for (int i = 0; i < p->size && slot < 0; i++)
                if (!p->busy[i]) slot = i;
            if (slot >= 0) break;
            pthread_mutex_unlock(&p->mu);
            ts_err_set(err, "pool: no PostgreSQL connection free within %d ms (size %d)",
                       timeout_ms, p->size);
            return NULL;
        }
    }
    p->busy[slot] = true;
    PGconn *conn = p->conns[slot];
    pthread_mutex_unlock(&p->mu);

    /* Outside the lock: reset a connection found broken or closed by the
     * server while it was idle. */
    if (conn_stale(conn)) {
        if (PQstatus(conn) == CONNECTION_OK) atomic_fetch_add(&g_stale_found, 1);
        TLOG_WARN("postgres connection broken, reconnecting", "slot=%d", slot);
        if (!pg_reconnect(conn, NULL)) {
            char password[256], target[256], reason[512];
            dsn_parts(p->dsn, password, sizeof(password), target, sizeof(target));
            clean_message(PQerrorMessage(conn), password, reason, sizeof(reason));
            ts_err_set(err, "pool: reconnect to PostgreSQL %s failed: %s", target, reason);
            pg_pool_put(p, conn);
            return NULL;
        }
    }
    return conn;
}

void pg_pool_put(pg_pool *p, PGconn *conn)
{
    if (!p || !conn) return;
    /* Never hand the next user a connection in the middle of a transaction. */
    PGTransactionStatusType ts = PQtransactionStatus(conn);
    if (ts == PQTRANS_INTRANS || ts == PQTRANS_INERROR) pg_rollback(conn);
    pthread_mutex_lock(&p->mu);
    int slot = -1;
    for (int i = 0; i < p->size; i++)
        if (p->conns[i] == conn) slot = i;
    if (slot < 0 || !p->busy[slot]) {
        pthread_mutex_unlock(&p->mu);
        ts_panic("pg_pool_put: connection %p is not on loan from this pool", (void *)conn);
    }
    p->busy[slot] = false;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

bool pg_pool_ping(pg_pool *p, ts_err *err)
{
    PGconn *conn = pg_pool_get(p, 2000, err);
    if (!conn) return false;
    bool ok = pg_exec(conn, "SELECT 1", err);
    if (!ok) ts_err_prefix(err, "ping");
    pg_pool_put(p, conn);
    return ok;
}
