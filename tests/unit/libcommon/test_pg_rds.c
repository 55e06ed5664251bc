/* test_pg_rds.c: pg.c and rds.c against a real PostgreSQL and Redis that the
 * test starts in a temp dir (and stops in the group teardown, whatever failed).
 * Tests skip when the server binaries are not installed. */
#include "libcommon/deps.h"
#include "libcommon/log.h"
#include "libcommon/pg.h"
#include "libcommon/pg_stmt.h"
#include "libcommon/rds.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct {
    char dir[64];
    char log[128];
    char pgbin[128];
    bool pg_started;
    char pg_problem[256]; /* why PostgreSQL is not up, when its binaries exist */
    int pg_port;
    char dsn[256];
    pid_t redis_pid;
    char redis_problem[256];
    int redis_port;
    char redis_url[128];
    char redis_sock[128];
} T;

/* ---- helpers ------------------------------------------------------------------------ */

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        if (fd >= 0) close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

static void redirect_output(void)
{
    int fd = open(T.log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
}

/* Run a PostgreSQL tool from pgbin, as the postgres user when we are root. */
static int run_pg_tool(const char *tool, const char *const *args)
{
    const char *argv[32];
    int n = 0;
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", T.pgbin, tool);
    if (geteuid() == 0) {
        argv[n++] = "runuser";
        argv[n++] = "-u";
        argv[n++] = "postgres";
        argv[n++] = "--";
    }
    argv[n++] = path;
    for (; *args && n < 31; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        redirect_output();
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static bool find_pg(void)
{
    const char *env = getenv("TESSERA_PG_BINDIR");
    const char *dirs[] = {env,
                          "/usr/lib/postgresql/17/bin",
                          "/usr/lib/postgresql/16/bin",
                          "/usr/lib/postgresql/15/bin",
                          "/usr/lib/postgresql/14/bin",
                          "/usr/lib/postgresql/13/bin"};
    for (size_t i = 0; i < TS_ARRAY_LEN(dirs); i++) {
        char p[256];
        if (!dirs[i]) continue;
        snprintf(p, sizeof(p), "%s/initdb", dirs[i]);
        if (access(p, X_OK) == 0) {
            ts_strlcpy(T.pgbin, dirs[i], sizeof(T.pgbin));
            return true;
        }
    }
    return false;
}

static void start_pg(void)
{
    if (!find_pg()) return;
    T.pg_port = free_port();
    char data[128], opts[256], port[16];
    snprintf(data, sizeof(data), "%s/pg", T.dir);
    snprintf(port, sizeof(port), "%d", T.pg_port);
    const char *initdb[] = {"-D", data,          "-A", "trust", "-U", "tessera",
                            "-N", "--no-locale", "-E", "UTF8",  NULL};
    if (run_pg_tool("initdb", initdb) != 0) {
        snprintf(T.pg_problem, sizeof(T.pg_problem), "initdb failed (see %s)", T.log);
        return;
    }
    snprintf(opts, sizeof(opts),
             "-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=40",
             T.pg_port, T.dir);
    const char *start[] = {"-D", data, "-w", "-t", "30", "-o", opts, "start", NULL};
    T.pg_started = true; /* stop it in teardown even if start half-worked */
    if (run_pg_tool("pg_ctl", start) != 0) {
        snprintf(T.pg_problem, sizeof(T.pg_problem), "pg_ctl start failed (see %s)", T.log);
        return;
    }
    snprintf(T.dsn, sizeof(T.dsn), "host=127.0.0.1 port=%d user=tessera dbname=postgres",
             T.pg_port);
}

static void stop_pg(void)
{
    if (!T.pg_started) return;
    char data[128];
    snprintf(data, sizeof(data), "%s/pg", T.dir);
    const char *stop[] = {"-D", data, "-w", "-t", "20", "-m", "immediate", "stop", NULL};
    (void)run_pg_tool("pg_ctl", stop);
    T.pg_started = false;
}

static void start_redis(void)
{
    if (access("/usr/bin/redis-server", X_OK) != 0 &&
        system("command -v redis-server >/dev/null") != 0)
        return;
    T.redis_port = free_port();
    snprintf(T.redis_sock, sizeof(T.redis_sock), "%s/redis.sock", T.dir);
    snprintf(T.redis_url, sizeof(T.redis_url), "redis://127.0.0.1:%d", T.redis_port);
    char port[16];
    snprintf(port, sizeof(port), "%d", T.redis_port);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test */
        redirect_output();
        execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no", "--daemonize", "no", "--unixsocket", T.redis_sock,
               "--unixsocketperm", "700", (char *)NULL);
        _exit(127);
    }
    T.redis_pid = pid;
    int64_t deadline = ts_now_mono_ms() + 10000;
    while (ts_now_mono_ms() < deadline) {
        ts_err err;
        rds *r = rds_connect(T.redis_url, 500, &err);
        if (r) {
            rds_free(r);
            return;
        }
        usleep(20000);
    }
    snprintf(T.redis_problem, sizeof(T.redis_problem), "redis-server did not come up (see %s)",
             T.log);
}

static void stop_redis(void)
{
    if (T.redis_pid <= 0) return;
    kill(T.redis_pid, SIGTERM);
    for (int i = 0; i < 100; i++) {
        if (waitpid(T.redis_pid, NULL, WNOHANG) == T.redis_pid) {
            T.redis_pid = 0;
            return;
        }
        usleep(20000);
    }
    kill(T.redis_pid, SIGKILL);
    waitpid(T.redis_pid, NULL, 0);
    T.redis_pid = 0;
}

static int group_setup(void **state)
{
    (void)state;
    tlog_min_level = TLOG_LEVEL_ERROR; /* keep expected warnings out of the output */
    ts_strlcpy(T.dir, "/tmp/tessera-pgrds-XXXXXX", sizeof(T.dir));
    if (!mkdtemp(T.dir)) return -1;
    snprintf(T.log, sizeof(T.log), "%s/servers.log", T.dir);
    if (geteuid() == 0) {
        struct passwd *pw = getpwnam("postgres");
        if (!pw || chown(T.dir, pw->pw_uid, pw->pw_gid) != 0) T.pgbin[0] = '\0';
        chmod(T.dir, 0755);
        if (!pw)
            snprintf(T.pg_problem, sizeof(T.pg_problem), "running as root without a postgres user");
    }
    if (!T.pg_problem[0]) start_pg();
    start_redis();
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    stop_redis();
    stop_pg();
    if (getenv("TESSERA_TEST_KEEP")) return 0;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", T.dir);
    return system(cmd) == 0 ? 0 : -1;
}

#define NEED_PG()                                                                                  \
    do {                                                                                           \
        if (T.pg_problem[0]) fail_msg("PostgreSQL: %s", T.pg_problem);                             \
        if (!T.dsn[0]) skip();                                                                     \
    } while (0)
#define NEED_REDIS()                                                                               \
    do {                                                                                           \
        if (T.redis_problem[0]) fail_msg("Redis: %s", T.redis_problem);                            \
        if (T.redis_pid <= 0) skip();                                                              \
    } while (0)

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
 * records the outage, and both recover when it is back. */
static void test_pg_outage_is_noted(void **state)
{
    (void)state;
    NEED_PG();
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
    pg_pool_free(p);
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

/* ---- Redis ----------------------------------------------------------------------------------- */

static rds *connect_rds(const char *url)
{
    ts_err err = {{0}};
    rds *r = rds_connect(url, 1000, &err);
    if (!r) fail_msg("rds_connect %s: %s", url, err.msg);
    return r;
}

static redisReply *cmd(rds *r, const char *a0, const char *a1, const char *a2)
{
    const char *argv[3] = {a0, a1, a2};
    int argc = a2 ? 3 : a1 ? 2 : 1;
    ts_err err = {{0}};
    redisReply *rep = rds_command(r, argc, argv, NULL, &err);
    if (!rep) fail_msg("%s: %s", a0, err.msg);
    return rep;
}

static void test_rds_bad_urls(void **state)
{
    (void)state;
    static const struct {
        const char *url, *want;
    } cases[] = {
        {"", "empty"},
        {"http://localhost:6379", "must start with redis:// or unix://"},
        {"redis://", "missing host"},
        {"redis://:6379", "missing host"},
        {"redis://localhost:notaport", "port"},
        {"redis://localhost:70000", "port"},
        {"redis://localhost:0", "port"},
        {"redis://localhost:6379/x", "database"},
        {"redis://pw@localhost", "':password@'"},
        {"redis://:p%zz@localhost", "%-escape"},
        {"redis://[::1", "']'"},
        {"unix://relative/sock", "absolute"},
        {"unix:///tmp/x.sock?db=x", "?db="},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(cases); i++) {
        ts_err err = {{0}};
        rds *r = rds_connect(cases[i].url, 200, &err);
        if (r) {
            rds_free(r);
            fail_msg("'%s' accepted", cases[i].url);
        }
        if (!strstr(err.msg, cases[i].want))
            fail_msg("'%s': got '%s', want '%s'", cases[i].url, err.msg, cases[i].want);
    }
    char url[64];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", free_port());
    ts_err err = {{0}};
    assert_null(rds_connect(url, 200, &err));
    assert_non_null(strstr(err.msg, "cannot connect to Redis at 127.0.0.1:"));
    assert_null(rds_connect("unix:///nonexistent/redis.sock", 200, &err));
    assert_non_null(strstr(err.msg, "/nonexistent/redis.sock"));
}

static void test_rds_connect_ping_select(void **state)
{
    (void)state;
    NEED_REDIS();
    ts_err err = {{0}};
    char url[200];
    snprintf(url, sizeof(url), "%s/2", T.redis_url);
    rds *db2 = connect_rds(url);
    assert_true(rds_ping(db2, &err));
    freeReplyObject(cmd(db2, "SET", "where", "db2"));

    rds *db0 = connect_rds(T.redis_url);
    redisReply *rep = cmd(db0, "GET", "where", NULL);
    assert_int_equal(rep->type, REDIS_REPLY_NIL);
    freeReplyObject(rep);

    snprintf(url, sizeof(url), "unix://%s?db=2", T.redis_sock);
    rds *ux = connect_rds(url);
    assert_true(rds_ping(ux, &err));
    rep = cmd(ux, "GET", "where", NULL);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    assert_string_equal(rep->str, "db2");
    freeReplyObject(rep);

    /* Binary-safe arguments and error replies come back as replies. */
    const char *argv[3] = {"SET", "bin", "a\0b"};
    size_t lens[3] = {3, 3, 3};
    rep = rds_command(db0, 3, argv, lens, &err);
    assert_non_null(rep);
    freeReplyObject(rep);
    rep = cmd(db0, "STRLEN", "bin", NULL);
    assert_int_equal(rep->integer, 3);
    freeReplyObject(rep);
    rep = cmd(db0, "NOSUCHCOMMAND", NULL, NULL);
    assert_int_equal(rep->type, REDIS_REPLY_ERROR);
    freeReplyObject(rep);

    rds_free(ux);
    rds_free(db0);
    rds_free(db2);
}

static void test_rds_script_eval_and_noscript(void **state)
{
    (void)state;
    NEED_REDIS();
    ts_err err = {{0}};
    rds *r = connect_rds(T.redis_url);
    rds_script s = {.source = "return redis.call('INCRBY', KEYS[1], ARGV[1])"};
    assert_true(rds_script_load(r, &s, &err));
    assert_int_equal(strlen(s.sha), 40);
    const char *args[2] = {"counter", "5"};
    redisReply *rep = rds_eval(r, &s, 1, 2, args, NULL, &err);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
    assert_int_equal(rep->integer, 5);
    freeReplyObject(rep);

    freeReplyObject(cmd(r, "SCRIPT", "FLUSH", NULL));
    rep = rds_eval(r, &s, 1, 2, args, NULL, &err); /* NOSCRIPT -> load again -> retry */
    if (!rep) fail_msg("eval after flush: %s", err.msg);
    assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
    assert_int_equal(rep->integer, 10);
    freeReplyObject(rep);

    /* Not loaded yet: eval loads it. A script error is an error reply. */
    rds_script bad = {.source = "return redis.call('NOSUCH')"};
    rep = rds_eval(r, &bad, 0, 0, NULL, NULL, &err);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ERROR);
    freeReplyObject(rep);
    rds_script syntax = {.source = "this is not lua"};
    assert_false(rds_script_load(r, &syntax, &err));
    assert_non_null(strstr(err.msg, "SCRIPT LOAD"));
    assert_null(rds_eval(r, &s, 3, 2, args, NULL, &err)); /* more keys than args */
    rds_free(r);
}

static void test_rds_reconnect_after_kill(void **state)
{
    (void)state;
    NEED_REDIS();
    ts_err err = {{0}};
    rds *r = connect_rds(T.redis_url);
    rds *admin = connect_rds(T.redis_url);
    redisReply *rep = cmd(r, "CLIENT", "ID", NULL);
    char id[32];
    snprintf(id, sizeof(id), "%lld", rep->integer);
    freeReplyObject(rep);
    const char *kill_argv[4] = {"CLIENT", "KILL", "ID", id};
    rep = rds_command(admin, 4, kill_argv, NULL, &err);
    assert_non_null(rep);
    assert_int_equal(rep->integer, 1);
    freeReplyObject(rep);

    assert_true(rds_ping(r, &err)); /* EOF -> reconnect -> retry */
    rep = cmd(r, "CLIENT", "ID", NULL);
    assert_true(rep->integer != atoll(id));
    freeReplyObject(rep);
    rds_free(admin);
    rds_free(r);
}

static void test_rds_command_timeout(void **state)
{
    (void)state;
    NEED_REDIS();
    ts_err err = {{0}};
    rds *r = rds_connect(T.redis_url, 300, &err);
    assert_non_null(r);
    int64_t t0 = ts_now_mono_ms();
    const char *argv[3] = {"BLPOP", "never-filled", "3"};
    assert_null(rds_command(r, 3, argv, NULL, &err));
    int64_t took = ts_now_mono_ms() - t0;
    assert_true(took >= 250 && took < 1500); /* not retried */
    assert_non_null(strstr(err.msg, "timed out"));
    assert_true(rds_ping(r, &err)); /* a fresh connection */
    rds_free(r);
}

static void test_rds_auth(void **state)
{
    (void)state;
    NEED_REDIS(); /* runs last: it leaves a password on the server */
    ts_err err = {{0}};
    rds *admin = connect_rds(T.redis_url);
    const char *set_pw[4] = {"CONFIG", "SET", "requirepass", "p@ss:w/rd"};
    redisReply *rep = rds_command(admin, 4, set_pw, NULL, &err);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    freeReplyObject(rep);

    rds *anon = connect_rds(T.redis_url);
    assert_false(rds_ping(anon, &err));
    assert_non_null(strstr(err.msg, "NOAUTH"));
    rds_free(anon);

    char url[200];
    snprintf(url, sizeof(url), "redis://:p%%40ss%%3Aw%%2Frd@127.0.0.1:%d/1", T.redis_port);
    rds *r = connect_rds(url);
    assert_true(rds_ping(r, &err));
    rds_free(r);
    snprintf(url, sizeof(url), "redis://default:p%%40ss%%3Aw%%2Frd@127.0.0.1:%d", T.redis_port);
    r = connect_rds(url);
    assert_true(rds_ping(r, &err));
    rds_free(r);

    snprintf(url, sizeof(url), "redis://:wrong@127.0.0.1:%d", T.redis_port);
    assert_null(rds_connect(url, 1000, &err));
    assert_non_null(strstr(err.msg, "AUTH"));
    assert_null(strstr(err.msg, "wrong"));
    rds_free(admin);
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
        cmocka_unit_test(test_rds_bad_urls),
        cmocka_unit_test(test_rds_connect_ping_select),
        cmocka_unit_test(test_rds_script_eval_and_noscript),
        cmocka_unit_test(test_rds_reconnect_after_kill),
        cmocka_unit_test(test_rds_command_timeout),
        cmocka_unit_test(test_rds_auth),
    };
    return cmocka_run_group_tests_name("pg_rds", tests, group_setup, group_teardown);
}
