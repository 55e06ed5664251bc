/* servers.c: see servers.h. */
#include "tests/unit/libcommon/servers.h"

#include "libcommon/log.h"
#include "libcommon/rds.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

test_servers T;

int free_port(void)
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
int run_pg_tool(const char *tool, const char *const *args)
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

int servers_setup(bool pg, bool redis)
{
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
    if (pg && !T.pg_problem[0]) start_pg();
    if (redis) start_redis();
    return 0;
}

int servers_teardown(void)
{
    stop_redis();
    stop_pg();
    if (getenv("TESSERA_TEST_KEEP")) return 0;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", T.dir);
    return system(cmd) == 0 ? 0 : -1;
}
