/* sup_spawn.c: starting a kernel's supervisor (sup_spawn.h). */
#include "services/agent/sup_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libcommon/proc.h"
#include "services/agent/cgroups.h"

extern char **environ;

#define START_TIMEOUT_MS 60000

/* Start tessera-sup (services/agent/sup/main.c) for the kernel and wait for it
 * to report: posix_spawn (no copy of the agent's address space); the process
 * started forks the supervisor, hands its pid over on a pipe and exits, and
 * is reaped here at once. */
bool sup_spawn(runtime *rt, const char *id, pid_t *init_pid, pid_t *sup_pid, ts_err *err)
{
    char *kdir = rts_kdir(rt, id);
    char pid_file[600], log_file[600], bundle[600], oom_file[600], cap[32];
    snprintf(pid_file, sizeof(pid_file), "%s/init.pid", kdir);
    snprintf(log_file, sizeof(log_file), "%s/runc.log", kdir);
    snprintf(bundle, sizeof(bundle), "%s/bundle", kdir);
    snprintf(cap, sizeof(cap), "%lld", (long long)rt->log_cap);
    char rel[128];
    rts_cg_rel(id, rel, sizeof(rel));
    if (!cg_path("memory", rel, "memory.oom_control", oom_file, sizeof(oom_file)))
        oom_file[0] = '\0';
    /* --no-new-keyring: no session keyring per kernel. Each would be charged
     * to the kernels' one host user, whose key quota (kernel.keys.maxkeys,
     * 200 by default) then capped a node at about 200 kernels. The kernel
     * inherits tessera-sup's, which it cannot use: the seccomp profile
     * refuses add_key, request_key and keyctl (docs/agent.md). */
    const char *argv[] = {
        rt->sup_path, kdir,           cap,          oom_file, rt->runc,   "--log",
        log_file,     "--log-format", "json",       "run",    "--detach", "--no-new-keyring",
        "--bundle",   bundle,         "--pid-file", pid_file, id,         NULL};
    int rp[2], sp[2];
    if (pipe2(rp, O_CLOEXEC) < 0) {
        ts_err_set(err, "pipe: %s", strerror(errno));
        free(kdir);
        return false;
    }
    if (pipe2(sp, O_CLOEXEC) < 0) {
        ts_err_set(err, "pipe: %s", strerror(errno));
        close(rp[0]);
        close(rp[1]);
        free(kdir);
        return false;
    }
    /* the child's fds 0-4 are set in order below: keep the pipe ends above them */
    int *ends[] = {&rp[1], &sp[1]};
    for (size_t i = 0; i < TS_ARRAY_LEN(ends); i++) {
        if (*ends[i] >= 5) continue;
        int moved = fcntl(*ends[i], F_DUPFD_CLOEXEC, 5);
        if (moved >= 0) {
            close(*ends[i]);
            *ends[i] = moved;
        }
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDWR, 0);
    posix_spawn_file_actions_adddup2(&fa, 0, 1);
    posix_spawn_file_actions_adddup2(&fa, 0, 2);
    posix_spawn_file_actions_adddup2(&fa, rp[1], 3);
    posix_spawn_file_actions_adddup2(&fa, sp[1], 4);
    posix_spawn_file_actions_addclosefrom_np(&fa, 5);
    posix_spawnattr_t at;
    proc_spawnattr_init(&at, false);
    pid_t mid = 0;
    int rc = posix_spawn(&mid, rt->sup_path, &fa, &at, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    free(kdir);
    close(rp[1]);
    close(sp[1]);
    if (rc != 0) {
        ts_err_set(err, "start %s: %s", rt->sup_path, strerror(rc));
        close(rp[0]);
        close(sp[0]);
        return false;
    }
    int st;
    while (waitpid(mid, &st, 0) < 0 && errno == EINTR) {
    }
    int32_t pid32 = 0;
    if (read(sp[0], &pid32, sizeof(pid32)) != sizeof(pid32)) pid32 = 0;
    close(sp[0]);
    *sup_pid = pid32;
    char msg[512];
    size_t len = 0;
    int64_t deadline = ts_now_mono_ms() + START_TIMEOUT_MS;
    while (len < sizeof(msg) - 1) {
        struct pollfd p = {.fd = rp[0], .events = POLLIN};
        int64_t left = deadline - ts_now_mono_ms();
        if (left <= 0) break;
        int k = poll(&p, 1, (int)left);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        ssize_t n = read(rp[0], msg + len, sizeof(msg) - 1 - len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        len += (size_t)n;
        if (memchr(msg, '\n', len)) break;
    }
    close(rp[0]);
    msg[len] = '\0';
    if (strncmp(msg, "OK ", 3) == 0) {
        *init_pid = (pid_t)atoi(msg + 3);
        return true;
    }
    char why[400];
    rts_runc_log_error(log_file, why, sizeof(why));
    if (why[0])
        ts_err_set(err, "runc run: %s", why);
    else if (strncmp(msg, "ERR ", 4) == 0)
        ts_err_set(err, "%.*s", (int)strcspn(msg + 4, "\n"), msg + 4);
    else if (pid32 <= 0)
        ts_err_set(err, "%s did not start (exit status %d)", rt->sup_path,
                   WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    else
        ts_err_set(err, "container did not start within %d s", START_TIMEOUT_MS / 1000);
    return false;
}
