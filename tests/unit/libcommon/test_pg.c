/* test_pg.c: pg.c and pg_stmt.c against a real PostgreSQL that the test
 * starts in a temp dir (servers.h). */
#include "libcommon/deps.h"
#include "libcommon/log.h"
#include "libcommon/pg.h"
#include "libcommon/pg_stmt.h"
#include "tests/unit/libcommon/servers.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static PGconn *connect_pg(void)
{
    ts_err err = {{0}};
    PGconn *c = pg_connect_backoff(T.dsn, 5000, &err);
    if (!c) fail_msg("connect: %s", err.msg);
    return c;
}

static long long query_int(PGconn *c, const char *sql)
{
    PGresult *res = PQexec(c, sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        char msg[256];
        ts_strlcpy(msg, PQresultErrorMessage(res), sizeof(msg));
        PQclear(res);
        fail_msg("%s: %s", sql, msg);
    }
    long long v = PQgetisnull(res, 0, 0) ? -1 : atoll(PQgetvalue(res, 0, 0));
    PQclear(res);
    return v;
}

/* ---- PostgreSQL ---------------------------------------------------------------------------- */

static void test_pg_backoff_gives_up(void **state)
{
    (void)state;
    char dsn[256];
    snprintf(dsn, sizeof(dsn),
             "host=127.0.0.1 port=%d user=tessera password=s3cret-pw dbname=postgres", free_port());
    char *logbuf = NULL;
    size_t loglen = 0;
    FILE *logf = open_memstream(&logbuf, &loglen);
    tlog_set_stream(logf);
    tlog_min_level = TLOG_LEVEL_WARN;
    ts_err err = {{0}};
    int64_t t0 = ts_now_mono_ms();
    PGconn *c = pg_connect_backoff(dsn, 700, &err);
    int64_t took = ts_now_mono_ms() - t0;
    tlog_min_level = TLOG_LEVEL_ERROR;
    tlog_set_stream(NULL);
    fclose(logf);
    assert_null(c);
    assert_true(took >= 650 && took < 3000);
    assert_non_null(strstr(err.msg, "cannot connect to PostgreSQL"));
    assert_non_null(strstr(err.msg, "refused")); /* libpq's reason */
    assert_null(strstr(err.msg, "s3cret-pw"));
    assert_non_null(strstr(logbuf, "postgres connect failed"));
    assert_null(strstr(logbuf, "s3cret-pw"));
    free(logbuf);
}

static void test_pg_exec_and_transactions(void **state)
{
    (void)state;
    NEED_PG();
    PGconn *c = connect_pg();
    ts_err err = {{0}};
    assert_true(pg_exec(c, "CREATE TABLE tx_t (v int)", &err));
    assert_true(pg_begin(c, &err));
    assert_true(pg_exec(c, "INSERT INTO tx_t VALUES (1)", &err));
    pg_rollback(c);
    assert_int_equal(query_int(c, "SELECT count(*) FROM tx_t"), 0);
    assert_true(pg_begin(c, &err));
    assert_true(pg_exec(c, "INSERT INTO tx_t VALUES (2)", &err));
    assert_true(pg_commit(c, &err));
    assert_int_equal(query_int(c, "SELECT count(*) FROM tx_t"), 1);
    assert_false(pg_exec(c, "SELEC 1", &err));
    assert_non_null(strstr(err.msg, "syntax error"));
    assert_false(pg_exec(NULL, "SELECT 1", &err));
    PQfinish(c);
}

static const pg_migration good_migrations[] = {
    {2, "0002_gadgets.sql", "CREATE TABLE gadgets (id int); INSERT INTO widgets VALUES (1, 'a');"},
    {1, "0001_init.sql", "CREATE TABLE widgets (id int PRIMARY KEY, name text NOT NULL);"},
    {0},
};

static void test_pg_migrate_applies_once(void **state)
{
    (void)state;
    NEED_PG();
    PGconn *c = connect_pg();
    ts_err err = {{0}};
    for (int i = 0; i < 2; i++)
        if (!pg_migrate(c, "svc_once", good_migrations, 2, &err)) fail_msg("migrate: %s", err.msg);
    assert_int_equal(query_int(c, "SELECT count(*) FROM svc_once.schema_migrations"), 2);
    assert_int_equal(query_int(c, "SELECT count(*) FROM svc_once.widgets"), 1);
    assert_int_equal(query_int(c, "SELECT count(*) FROM svc_once.gadgets"), 0);
    assert_int_equal(query_int(c, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public' "
                                  "AND tablename IN ('widgets', 'gadgets')"),
                     0);
    assert_int_equal(query_int(c, "SELECT max(version) FROM svc_once.schema_migrations "
                                  "WHERE name = '0002_gadgets.sql'"),
                     2);
    /* A schema name that needs quoting. */
    if (!pg_migrate(c, "Odd \"Name\"", good_migrations, 2, &err)) fail_msg("migrate: %s", err.msg);
    assert_int_equal(query_int(c, "SELECT count(*) FROM \"Odd \"\"Name\"\"\".widgets"), 1);
    /* Nothing to apply is fine too. */
    assert_true(pg_migrate(c, "svc_empty", NULL, 0, &err));
    PQfinish(c);
}

static void test_pg_migrate_failure_rolls_back(void **state)
{
    (void)state;
    NEED_PG();
    static const pg_migration bad[] = {
        {1, "0001_init.sql", "CREATE TABLE t1 (id int);"},
        {2, "0002_broken.sql", "CREATE TABLE t2 (id int); SELECT * FROM no_such_table;"},
        {3, "0003_later.sql", "CREATE TABLE t3 (id int);"},
    };
    PGconn *c = connect_pg();
    ts_err err = {{0}};
    assert_false(pg_migrate(c, "svc_bad", bad, 3, &err));
    assert_non_null(strstr(err.msg, "migration 0002_broken.sql: "));
    assert_non_null(strstr(err.msg, "no_such_table"));
    assert_int_equal(query_int(c, "SELECT count(*) FROM svc_bad.schema_migrations"), 1);
    assert_int_equal(query_int(c, "SELECT count(*) FROM pg_tables WHERE schemaname = 'svc_bad' "
                                  "AND tablename IN ('t2', 't3')"),
                     0);
    /* The connection is usable afterwards and the lock was released. */
    assert_int_equal(query_int(c, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"), 0);
    static const pg_migration dup[] = {{1, "0001_a.sql", "SELECT 1"},
                                       {1, "0001_b.sql", "SELECT 1"}};
    assert_false(pg_migrate(c, "svc_dup", dup, 2, &err));
    assert_non_null(strstr(err.msg, "same version"));
    PQfinish(c);
}

static const pg_migration race_migrations[] = {
    {1, "0001_hits.sql", "SELECT pg_sleep(0.3); CREATE TABLE hits (n int);"},
    {2, "0002_hit.sql", "INSERT INTO hits VALUES (1);"},
};

static void *migrate_thread(void *arg)
{
    ts_err *err = arg;
    PGconn *c = pg_connect_backoff(T.dsn, 5000, err);
    if (!c) return (void *)0;
    bool ok = pg_migrate(c, "svc_race", race_migrations, 2, err);
    PQfinish(c);
    return (void *)(intptr_t)ok;
}

static void test_pg_migrate_concurrent(void **state)
{
    (void)state;
    NEED_PG();
    pthread_t th[2];
    ts_err errs[2] = {{{0}}, {{0}}};
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, migrate_thread, &errs[i]), 0);
    for (int i = 0; i < 2; i++) {
        void *ret;
        pthread_join(th[i], &ret);
        if (!ret) fail_msg("thread %d: %s", i, errs[i].msg);
    }
    PGconn *c = connect_pg();
    assert_int_equal(query_int(c, "SELECT count(*) FROM svc_race.schema_migrations"), 2);
    assert_int_equal(query_int(c, "SELECT count(*) FROM svc_race.hits"), 1);
    PQfinish(c);
}

static void test_pg_pool(void **state)
{
    (void)state;
    NEED_PG();
    ts_err err = {{0}};
    pg_pool *p = pg_pool_new(T.dsn, 2, 5000, true, &err);
    if (!p) fail_msg("pool: %s", err.msg);
    PGconn *a = pg_pool_get(p, 1000, &err);
    assert_non_null(a);
    assert_true(pg_pool_ping(p, &err)); /* uses the other one */
    PGconn *b = pg_pool_get(p, 1000, &err);
    assert_non_null(b);
    assert_ptr_not_equal(a, b);
    assert_false(pg_pool_ping(p, &err)); /* none free */
    assert_non_null(strstr(err.msg, "no PostgreSQL connection free"));

    /* A connection left inside a transaction is rolled back on put. */
    assert_true(pg_begin(b, &err));
    pg_pool_put(p, b);
    assert_int_equal(PQtransactionStatus(b), PQTRANS_IDLE);

    /* A connection whose server went away is reset on the next get. */
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT pg_terminate_backend(%d)::int", PQbackendPID(b));
    assert_int_equal(query_int(a, sql) >= 0, 1);
    b = pg_pool_get(p, 1000, &err);
    assert_non_null(b);
    ts_err e2;
    if (!pg_exec(b, "SELECT 1", &e2)) { /* libpq learns of the loss here */
        pg_pool_put(p, b);
        b = pg_pool_get(p, 1000, &err);
        assert_non_null(b);
        assert_int_equal(PQstatus(b), CONNECTION_OK);
    }
    assert_true(pg_exec(b, "SELECT 1", &err));
    pg_pool_put(p, b);
    pg_pool_put(p, a);
    assert_true(pg_pool_ping(p, &err));
    pg_pool_free(p);

    assert_null(pg_pool_new(T.dsn, 0, 100, true, &err));
}

/* pg_ctl restart -m fast: every backend is told to go and its socket closed. */
static void restart_pg(void)
{
    char data[128], opts[256];
    snprintf(data, sizeof(data), "%s/pg", T.dir);
    snprintf(opts, sizeof(opts),
             "-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=40",
             T.pg_port, T.dir);
    const char *restart[] = {"-D",   data, "-w", "-t",      "30", "-m",
                             "fast", "-o", opts, "restart", NULL};
    assert_int_equal(run_pg_tool("pg_ctl", restart), 0);
}

static unsigned long long pg_metric(const char *name)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    pg_collect(f, NULL);
    fclose(f);
    unsigned long long v = 0;
    char key[128];
    snprintf(key, sizeof(key), "\n%s ", name);
    const char *at = strstr(text, key);
    if (!at) fail_msg("metric %s missing in:\n%s", name, text);
    v = strtoull(at + strlen(key), NULL, 10);
    free(text);
    return v;
}

/* After a restart of the server every pooled connection is dead; none of
 * them may fail a caller's statement: the pool finds each before lending
 * it (or the read-only statement is run again on a new connection). */
static void test_pg_pool_heals_after_restart(void **state)
{
    (void)state;
    NEED_PG();
    ts_err err = {{0}};
    pg_pool *p = pg_pool_new(T.dsn, 3, 5000, true, &err);
    if (!p) fail_msg("pool: %s", err.msg);
    PGconn *held[3];
    for (int i = 0; i < 3; i++) { /* every slot used, each with a prepared statement */
        held[i] = pg_pool_get(p, 1000, &err);
        assert_non_null(held[i]);
        PQclear(pg_exec_cached(held[i], "SELECT 1", 0, NULL));
    }
    for (int i = 0; i < 3; i++)
        pg_pool_put(p, held[i]);
    unsigned long long stale0 = pg_metric("tessera_pg_stale_connections_total");
    unsigned long long re0 = pg_metric("tessera_pg_reconnects_total");
    restart_pg();
    usleep(200000); /* the FATAL notices reach the sockets */
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 3; i++) {
            held[i] = pg_pool_get(p, 1000, &err);
            if (!held[i]) fail_msg("get after restart: %s", err.msg);
        }
        for (int i = 0; i < 3; i++) {
            PGresult *r = pg_exec_cached(held[i], "SELECT 1", 0, NULL);
            if (PQresultStatus(r) != PGRES_TUPLES_OK)
                fail_msg("statement after restart failed: %s", PQresultErrorMessage(r));
            PQclear(r);
        }
        for (int i = 0; i < 3; i++)
            pg_pool_put(p, held[i]);
    }
    assert_true(pg_metric("tessera_pg_stale_connections_total") +
                    pg_metric("tessera_pg_statement_retries_total") >=
                stale0 + 3);
    assert_true(pg_metric("tessera_pg_reconnects_total") >= re0 + 3);
    assert_false(deps_is_down(DEP_POSTGRESQL));
    pg_pool_free(p);
}

/* A connection broken under a statement: a read-only one is run again on a
 * new connection; a write is not (it may have been applied), and the failure
 * says the server was unavailable. */
static void test_pg_retry_only_safe_statements(void **state)
{
    (void)state;
    NEED_PG();
    PGconn *admin = connect_pg(), *c = connect_pg();
    assert_true(pg_stmt_attach(c));
    char sql[128];
    ts_err err = {{0}};
    assert_true(pg_exec(admin, "CREATE TABLE IF NOT EXISTS heal_t (v int)", &err));

    snprintf(sql, sizeof(sql), "SELECT pg_terminate_backend(%d)::int", PQbackendPID(c));
    assert_int_equal(query_int(admin, sql), 1);
    usleep(100000);
    PGresult *r = pg_exec_cached(c, " select 41 + 1", 0, NULL);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    assert_string_equal(PQgetvalue(r, 0, 0), "42");
    PQclear(r);

    snprintf(sql, sizeof(sql), "SELECT pg_terminate_backend(%d)::int", PQbackendPID(c));
    assert_int_equal(query_int(admin, sql), 1);
    usleep(100000);
    r = pg_exec_cached(c, "INSERT INTO heal_t VALUES (1)", 0, NULL);
    assert_int_not_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    assert_true(pg_unavailable(c, r));
    PQclear(r);
    assert_int_equal(query_int(admin, "SELECT count(*) FROM heal_t"), 0);

    /* BEGIN is safe: a transaction starts on the new connection. */
    assert_true(pg_reconnect(c, &err));
    snprintf(sql, sizeof(sql), "SELECT pg_terminate_backend(%d)::int", PQbackendPID(c));
    assert_int_equal(query_int(admin, sql), 1);
    usleep(100000);
    assert_true(pg_begin(c, &err));
    assert_true(pg_exec(c, "INSERT INTO heal_t VALUES (2)", &err));
    assert_true(pg_commit(c, &err));
    assert_int_equal(query_int(admin, "SELECT count(*) FROM heal_t"), 1);

    /* Inside a transaction nothing is run again, not even a SELECT. */
    assert_true(pg_begin(c, &err));
    snprintf(sql, sizeof(sql), "SELECT pg_terminate_backend(%d)::int", PQbackendPID(c));
    assert_int_equal(query_int(admin, sql), 1);
    usleep(100000);
    r = pg_exec_cached(c, "SELECT 1", 0, NULL);
    assert_int_not_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    PQclear(r);
    assert_int_equal(PQstatus(c), CONNECTION_BAD);

    assert_true(pg_exec(admin, "DROP TABLE heal_t", &err));
    PQfinish(c);
    PQfinish(admin);
}

/* While the server is down the pool says so at once (no hang), deps.h
 * records the outage, and both recover when it is back. The policy here calls
 * one failure an outage (test_deps.c covers the window). */
static void test_pg_outage_is_noted(void **state)
{
    (void)state;
    NEED_PG();
    deps_reset();
    deps_set_policy(&(deps_policy){.failures = 1, .window_ms = 0});
    ts_err err = {{0}};
    pg_pool *p = pg_pool_new(T.dsn, 2, 5000, true, &err);
    if (!p) fail_msg("pool: %s", err.msg);
    char data[128];
    snprintf(data, sizeof(data), "%s/pg", T.dir);
    const char *stop[] = {"-D", data, "-w", "-t", "20", "-m", "fast", "stop", NULL};
    assert_int_equal(run_pg_tool("pg_ctl", stop), 0);
    int64_t t0 = ts_now_mono_ms();
    PGconn *c = pg_pool_get(p, 1000, &err);
    if (c) { /* the socket may not have told yet: the statement finds out */
        PGresult *r = pg_exec_cached(c, "SELECT 1", 0, NULL);
        assert_int_not_equal(PQresultStatus(r), PGRES_TUPLES_OK);
        assert_true(pg_unavailable(c, r));
        PQclear(r);
        pg_pool_put(p, c);
    }
    assert_false(pg_pool_ping(p, &err));
    assert_true(ts_now_mono_ms() - t0 < 10000);
    assert_true(deps_is_down(DEP_POSTGRESQL));
    assert_string_equal(deps_down(), "postgresql");

    char opts[256];
    snprintf(opts, sizeof(opts),
             "-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=40",
             T.pg_port, T.dir);
    const char *start[] = {"-D", data, "-w", "-t", "30", "-o", opts, "start", NULL};
    assert_int_equal(run_pg_tool("pg_ctl", start), 0);
    if (!pg_pool_ping(p, &err)) fail_msg("ping after start: %s", err.msg);
    assert_false(deps_is_down(DEP_POSTGRESQL));
    if (deps_down()) fail_msg("still down: %s", deps_down());
    assert_false(deps_is_failing(DEP_POSTGRESQL));
    pg_pool_free(p);
    deps_set_policy(
        &(deps_policy){.failures = DEPS_DEFAULT_FAILURES, .window_ms = DEPS_DEFAULT_WINDOW_MS});
}

typedef struct holder {
    pg_pool *p;
    PGconn *c;
} holder;

static void *hold_then_put(void *arg)
{
    holder *h = arg;
    usleep(200000);
    pg_pool_put(h->p, h->c);
    return NULL;
}

static void test_pg_pool_one_blocks(void **state)
{
    (void)state;
    NEED_PG();
    ts_err err = {{0}};
    pg_pool *p = pg_pool_new(T.dsn, 1, 5000, true, &err);
    if (!p) fail_msg("pool: %s", err.msg);
    PGconn *a = pg_pool_get(p, 100, &err);
    assert_non_null(a);
    int64_t t0 = ts_now_mono_ms();
    assert_null(pg_pool_get(p, 250, &err));
    int64_t took = ts_now_mono_ms() - t0;
    assert_true(took >= 240 && took < 2000);
    assert_non_null(strstr(err.msg, "within 250 ms"));

    /* A waiter wakes when the connection comes back. */
    holder h = {p, a};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, hold_then_put, &h), 0);
    PGconn *b = pg_pool_get(p, 3000, &err);
    pthread_join(th, NULL);
    assert_ptr_equal(b, a);
    pg_pool_put(p, b);
    pg_pool_free(p);
}

static const char *pg_text(PGresult *r)
{
    return PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "?";
}

static void test_pg_stmt_cache(void **state)
{
    (void)state;
    NEED_PG();
    PGconn *c = connect_pg();
    /* Without a cache: plain PQexecParams. */
    assert_false(pg_stmt_attached(c));
    assert_int_equal(pg_stmt_count(c), 0);
    const char *p1[] = {"41"};
    PGresult *r = pg_exec_cached(c, "SELECT ($1::int + 1)::text", 1, p1);
    assert_string_equal(pg_text(r), "42");
    PQclear(r);

    assert_true(pg_stmt_attach(c));
    assert_int_equal(pg_stmt_count(c), 0);
    for (int i = 0; i < 3; i++) { /* prepared once, run three times */
        char v[8];
        snprintf(v, sizeof(v), "%d", i);
        const char *p[] = {v};
        r = pg_exec_cached(c, "SELECT ($1::int * 2)::text", 1, p);
        char want[8];
        snprintf(want, sizeof(want), "%d", i * 2);
        assert_string_equal(pg_text(r), want);
        PQclear(r);
    }
    assert_int_equal(pg_stmt_count(c), 1);
    assert_int_equal(
        query_int(c, "SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'ts%'"), 1);
    /* The same text at another address is the same statement; another text is not. */
    char copy[64];
    snprintf(copy, sizeof(copy), "%s", "SELECT ($1::int * 2)::text");
    r = pg_exec_cached(c, copy, 1, p1);
    assert_string_equal(pg_text(r), "82");
    PQclear(r);
    assert_int_equal(pg_stmt_count(c), 1);
    r = pg_exec_cached(c, "SELECT ($1::int * 3)::text", 1, p1);
    assert_string_equal(pg_text(r), "123");
    PQclear(r);
    assert_int_equal(pg_stmt_count(c), 2);

    /* A bad statement: its error comes back, nothing is kept. */
    r = pg_exec_cached(c, "SELEC nonsense", 0, NULL);
    assert_int_equal(PQresultStatus(r), PGRES_FATAL_ERROR);
    assert_string_equal(PQresultErrorField(r, PG_DIAG_SQLSTATE), "42601");
    PQclear(r);
    assert_int_equal(pg_stmt_count(c), 2);
    /* A failing execution inside a transaction leaves the statements usable after it. */
    assert_true(pg_exec(c, "BEGIN", &(ts_err){{0}}));
    const char *bad[] = {"x"};
    r = pg_exec_cached(c, "SELECT ($1::int * 2)::text", 1, bad);
    assert_int_equal(PQresultStatus(r), PGRES_FATAL_ERROR);
    PQclear(r);
    pg_rollback(c);
    r = pg_exec_cached(c, "SELECT ($1::int * 2)::text", 1, p1);
    assert_string_equal(pg_text(r), "82");
    PQclear(r);

    /* A statement first prepared inside a transaction that rolls back stays
     * prepared (named statements are not transactional). */
    assert_true(pg_exec(c, "BEGIN", &(ts_err){{0}}));
    r = pg_exec_cached(c, "SELECT ($1::int * 5)::text", 1, p1);
    assert_string_equal(pg_text(r), "205");
    PQclear(r);
    pg_rollback(c);
    r = pg_exec_cached(c, "SELECT ($1::int * 5)::text", 1, p1);
    assert_string_equal(pg_text(r), "205");
    PQclear(r);
    assert_int_equal(pg_stmt_count(c), 3);

    /* A reset connection is a new server session: the cache starts again. */
    PQreset(c);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    assert_int_equal(pg_stmt_count(c), 0);
    r = pg_exec_cached(c, "SELECT ($1::int * 2)::text", 1, p1);
    assert_string_equal(pg_text(r), "82");
    PQclear(r);
    assert_int_equal(pg_stmt_count(c), 1);

    /* Past the limit, statements still run (unprepared). */
    for (int i = 0; i < PG_STMT_CACHE_MAX + 5; i++) {
        char sql[64];
        snprintf(sql, sizeof(sql), "SELECT (%d + $1::int)::text", i);
        r = pg_exec_cached(c, sql, 1, p1);
        char want[16];
        snprintf(want, sizeof(want), "%d", i + 41);
        assert_string_equal(pg_text(r), want);
        PQclear(r);
    }
    assert_int_equal(pg_stmt_count(c), PG_STMT_CACHE_MAX);
    PQfinish(c); /* frees the cache (ASan would say otherwise) */
}

static void test_pg_pool_prepare_flag(void **state)
{
    (void)state;
    NEED_PG();
    ts_err err = {{0}};
    pg_pool *on = pg_pool_new(T.dsn, 1, 5000, true, &err),
            *off = pg_pool_new(T.dsn, 1, 5000, false, &err);
    if (!on || !off) fail_msg("pool: %s", err.msg);
    PGconn *a = pg_pool_get(on, 1000, &err), *b = pg_pool_get(off, 1000, &err);
    assert_int_equal(pg_stmt_count(a), 0);
    assert_true(pg_stmt_attached(a));
    assert_false(pg_stmt_attached(b));
    pg_pool_put(on, a);
    pg_pool_put(off, b);
    pg_pool_free(on);
    pg_pool_free(off);
}

static int group_setup(void **state)
{
    (void)state;
    return servers_setup(true, false);
}

static int group_teardown(void **state)
{
    (void)state;
    return servers_teardown();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pg_backoff_gives_up),
        cmocka_unit_test(test_pg_exec_and_transactions),
        cmocka_unit_test(test_pg_migrate_applies_once),
        cmocka_unit_test(test_pg_migrate_failure_rolls_back),
        cmocka_unit_test(test_pg_migrate_concurrent),
        cmocka_unit_test(test_pg_pool),
        cmocka_unit_test(test_pg_pool_one_blocks),
        cmocka_unit_test(test_pg_stmt_cache),
        cmocka_unit_test(test_pg_pool_prepare_flag),
        cmocka_unit_test(test_pg_pool_heals_after_restart),
        cmocka_unit_test(test_pg_retry_only_safe_statements),
        cmocka_unit_test(test_pg_outage_is_noted),
    };
    return cmocka_run_group_tests_name("pg", tests, group_setup, group_teardown);
}
