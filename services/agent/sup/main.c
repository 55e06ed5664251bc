/* tessera-sup: the supervisor of one kernel, a small program of its own that
 * the agent starts with posix_spawn (docs/agent.md, "The supervisor"). It
 * runs `runc create` with the container's console on a pipe, reports the
 * container's init pid (or why it did not start), then keeps the console
 * log (size-capped, logs.c) and reaps what is re-parented to it (it is a
 * child subreaper) until init exits, when it writes <kdir>/exit:
 * "<code> <signal> <oom kills> <wall ms>". The agent can stop and start
 * again meanwhile: the supervisor is not its child.
 *
 * Before, the agent forked itself for this (twice) and the supervisor forked
 * runc: three copies of the agent's address space per kernel, whose page
 * tables were copied and torn down again (2-3% of all CPU with 8 sessions
 * starting at once), and a supervisor holding a copy-on-write image of the
 * agent for the kernel's whole life.
 *
 * Usage: tessera-sup KDIR LOG_CAP OOM_FILE RUNC [RUNC-ARG...]
 *   KDIR      the kernel's directory (init.pid and exit are written there,
 *             the console log goes to KDIR/logs)
 *   LOG_CAP   bytes of console log kept
 *   OOM_FILE  memory.oom_control of the kernel's cgroup, or "" (no count)
 *   RUNC ...  the `runc create` command line
 *   fd 3      "OK <init pid>\n" or "ERR <why>\n" once the container is
 *             created or has failed
 *   fd 4      the supervisor's pid (int32, native order): the process the
 *             agent starts forks the supervisor, writes its pid there and
 *             exits, so the agent reaps it at once and the supervisor is
 *             re-parented away from the agent */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libcommon/common.h"
#include "services/agent/logs.h"

typedef struct sup_args {
    char *const *runc_argv;
    char kdir[512];
    char pid_file[600];
    char exit_file[600];
    char oom_file[600]; /* memory.oom_control of the kernel's cgroup, or "" */
    int64_t log_cap;
} sup_args;

static int64_t _sup_read_oom_kills(const char *path)
{
    if (!path[0]) return -1;
    char buf[512];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = '\0';
    char *p = strstr(buf, "oom_kill ");
    return p ? strtoll(p + 9, NULL, 10) : 0;
}

static void _sup_write(int fd, const char *s)
{
    logs_write_all(fd, s, strlen(s));
}

/* Runs in the supervisor process; ready (fd 3) gets "OK <init pid>" or "ERR <why>".
 * Long: the supervisor's life in order (detach, start runc, report, reap until init ends); it never
 * returns. */
TS_NORETURN static void _supervise(const sup_args *a)
{
    const int ready = 3;
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_SETMASK, &chld, NULL);
    for (int sig = 1; sig < 32; sig++)
        if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
    /* An agent stopping (its process group, its terminal) must not take the
     * supervisor with it: the container would lose its log and exit status. */
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    int lp[2];
    log_writer lw;
    char msg[256];
    if (sfd < 0 || devnull < 0 || pipe2(lp, O_CLOEXEC) < 0) {
        _sup_write(ready, "ERR supervisor set-up failed\n");
        _exit(1);
    }
    char logs_dir[600];
    snprintf(logs_dir, sizeof(logs_dir), "%s/logs", a->kdir);
    if (!logw_open(&lw, logs_dir, a->log_cap)) {
        _sup_write(ready, "ERR cannot open the kernel log\n");
        _exit(1);
    }
    pid_t runc = fork();
    if (runc == 0) {
        dup2(devnull, 0);
        dup2(lp[1], 1);
        dup2(lp[1], 2);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (int sig = 1; sig < 32; sig++)
            if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
        execvp(a->runc_argv[0], a->runc_argv);
        _exit(127);
    }
    close(lp[1]);
    if (runc < 0) {
        _sup_write(ready, "ERR fork: cannot start runc\n");
        _exit(1);
    }
    int st = 0;
    while (waitpid(runc, &st, 0) < 0 && errno == EINTR) {
    }
    pid_t init = 0;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        char buf[32] = {0};
        int fd = open(a->pid_file, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t n = read(fd, buf, sizeof(buf) - 1);
            (void)n;
            close(fd);
        }
        init = (pid_t)atoi(buf);
    }
    if (init <= 0) {
        snprintf(msg, sizeof(msg), "ERR runc exited with status %d\n",
                 WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
        _sup_write(ready, msg);
        /* keep what runc (or a half-started container) printed */
        char buf[8192];
        ssize_t n;
        fcntl(lp[0], F_SETFL, O_NONBLOCK);
        while ((n = read(lp[0], buf, sizeof(buf))) > 0)
            logw_write(&lw, buf, (size_t)n);
        _exit(1);
    }
    snprintf(msg, sizeof(msg), "OK %d\n", (int)init);
    _sup_write(ready, msg);
    close(ready);

    bool init_done = false, pipe_open = true;
    int64_t done_at = 0;
    char buf[65536];
    while (!init_done || pipe_open) {
        if (init_done && ts_now_mono_ms() - done_at > 2000) break;
        struct pollfd p[2] = {{.fd = sfd, .events = POLLIN},
                              {.fd = pipe_open ? lp[0] : -1, .events = POLLIN}};
        int k = poll(p, 2, init_done ? 200 : -1);
        if (k < 0 && errno != EINTR) break;
        if (p[1].revents) {
            ssize_t n = read(lp[0], buf, sizeof(buf));
            if (n > 0)
                logw_write(&lw, buf, (size_t)n);
            else if (n == 0 || (errno != EINTR && errno != EAGAIN))
                pipe_open = false;
        }
        if (p[0].revents) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
            }
        }
        /* reap everything re-parented to us; note init's status */
        pid_t w;
        while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
            if (w != init) continue;
            int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            int sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
            char line[160];
            snprintf(line, sizeof(line), "%d %d %lld %lld\n", code, sig,
                     (long long)_sup_read_oom_kills(a->oom_file), (long long)ts_now_wall_ms());
            char tmp[620];
            snprintf(tmp, sizeof(tmp), "%s.tmp", a->exit_file);
            int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (fd >= 0) {
                _sup_write(fd, line);
                fsync(fd);
                close(fd);
                rename(tmp, a->exit_file);
            }
            init_done = true;
            done_at = ts_now_mono_ms();
        }
    }
    logw_close(&lw);
    _exit(0);
}

static int _usage(FILE *f, int rc)
{
    fprintf(f, "usage: tessera-sup KDIR LOG_CAP OOM_FILE RUNC [RUNC-ARG...]\n"
               "The agent's per-kernel supervisor, started by tessera-agent with fds 3 and 4\n"
               "open (docs/agent.md, \"The supervisor\"); not meant to be run by hand.\n");
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
        return _usage(stdout, 0);
    char *end = NULL;
    long long cap = argc >= 5 ? strtoll(argv[2], &end, 10) : 0;
    if (argc < 5 || !end || *end || cap <= 0 || strlen(argv[1]) >= 500 || strlen(argv[3]) >= 600 ||
        fcntl(3, F_GETFD) < 0 || fcntl(4, F_GETFD) < 0)
        return _usage(stderr, 2);
    sup_args a;
    memset(&a, 0, sizeof(a));
    snprintf(a.kdir, sizeof(a.kdir), "%s", argv[1]);
    snprintf(a.pid_file, sizeof(a.pid_file), "%s/init.pid", a.kdir);
    snprintf(a.exit_file, sizeof(a.exit_file), "%s/exit", a.kdir);
    snprintf(a.oom_file, sizeof(a.oom_file), "%s", argv[3]);
    a.log_cap = cap;
    a.runc_argv = argv + 4;
    pid_t sup = fork();
    if (sup == 0) {
        close(4);
        setsid();
        prctl(PR_SET_CHILD_SUBREAPER, 1);
        _supervise(&a);
    }
    int32_t pid32 = (int32_t)sup;
    (void)!write(4, &pid32, sizeof(pid32));
    return sup > 0 ? 0 : 1;
}
