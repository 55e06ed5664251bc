/* proc.c: spawn a helper program, feed its stdin, capture its output with caps
 * and a deadline. posix_spawn keeps this cheap (vfork-style) and safe in a
 * threaded agent: the pipes are close-on-exec, everything above fd 2 is closed
 * in the child. */
#include "libcommon/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libcommon/common.h"

extern char **environ;

static int _pidfd_open(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int _pidfd_signal(int pidfd, int sig)
{
    return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

typedef struct capbuf {
    char *data;
    size_t len, cap;
    bool truncated;
} capbuf;

static void _cap_append(capbuf *b, const char *p, size_t n)
{
    size_t room = b->cap > b->len ? b->cap - b->len : 0;
    if (n > room) {
        b->truncated = true;
        n = room;
    }
    if (!n) return;
    b->data = ts_realloc(b->data, b->len + n + 1);
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

/* Drain what fd has now; false at EOF (or a read error). */
static bool _drain(int fd, capbuf *b)
{
    char buf[16384];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n > 0) {
            _cap_append(b, buf, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return true;
        return false;
    }
}

static pid_t _read_pid_file(const char *path)
{
    if (!path) return 0;
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    long pid = 0;
    if (fscanf(f, "%ld", &pid) != 1) pid = 0;
    fclose(f);
    return pid > 1 ? (pid_t)pid : 0;
}

bool proc_signal_checked(pid_t pid, int sig, const char *cgroup_hint)
{
    if (pid <= 1) return false;
    int pfd = _pidfd_open(pid);
    if (pfd < 0) return false;
    bool ok = true;
    if (cgroup_hint) {
        /* The pidfd pins the process: if /proc/<pid>/cgroup still names our
         * cgroup now, the signal below reaches that same process. */
        char path[64], text[4096];
        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
        if (fd >= 0) close(fd);
        text[n > 0 ? n : 0] = '\0';
        ok = n > 0 && strstr(text, cgroup_hint) != NULL;
    }
    if (ok) ok = _pidfd_signal(pfd, sig) == 0;
    close(pfd);
    return ok;
}

bool proc_wait_gone(pid_t pid, int timeout_ms)
{
    if (pid <= 0) return true;
    int pfd = _pidfd_open(pid);
    if (pfd < 0) return errno == ESRCH;
    struct pollfd p = {.fd = pfd, .events = POLLIN};
    int64_t deadline = ts_now_mono_ms() + timeout_ms;
    int rc;
    do {
        int64_t left = deadline - ts_now_mono_ms();
        rc = poll(&p, 1, left > 0 ? (int)left : 0);
    } while (rc < 0 && errno == EINTR);
    close(pfd);
    return rc > 0;
}

/* SIGKILL pid and its descendants (from /proc/<pid>/task/<tid>/children),
 * twice over, so that a fork racing the first pass is caught by the second. */
static void _kill_tree(pid_t root)
{
    for (int pass = 0; pass < 2; pass++) {
        pid_t todo[1024];
        int n = 0, i = 0;
        todo[n++] = root;
        while (i < n) {
            pid_t p = todo[i++];
            kill(p, SIGSTOP); /* no new children while we look */
            char dir[64];
            snprintf(dir, sizeof(dir), "/proc/%d/task", (int)p);
            DIR *d = opendir(dir);
            struct dirent *e;
            while (d && (e = readdir(d)) != NULL) {
                if (e->d_name[0] == '.') continue;
                char path[128];
                snprintf(path, sizeof(path), "/proc/%d/task/%s/children", (int)p, e->d_name);
                FILE *f = fopen(path, "re");
                long c;
                while (f && fscanf(f, "%ld", &c) == 1)
                    if (n < (int)TS_ARRAY_LEN(todo)) todo[n++] = (pid_t)c;
                if (f) fclose(f);
            }
            if (d) closedir(d);
        }
        for (i = 0; i < n; i++)
            kill(todo[i], SIGKILL);
    }
}

static int _status_code(int st)
{
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return -1;
}

void proc_spawnattr_init(posix_spawnattr_t *at, bool own_group)
{
    posix_spawnattr_init(at);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(at, &none);
    posix_spawnattr_setsigdefault(at, &all);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    if (own_group) flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setflags(at, flags);
    if (own_group) posix_spawnattr_setpgroup(at, 0);
}

/* Long: one poll loop over the child's pidfd, its pipes and its deadline; the kill and drain state
 * is the loop's own. */
bool proc_run(const proc_opts *o, exec_result *r, ts_err *err)
{
    memset(r, 0, sizeof(*r));
    int out_p[2] = {-1, -1}, err_p[2] = {-1, -1}, in_p[2] = {-1, -1};
    if (pipe2(out_p, O_CLOEXEC) < 0 || pipe2(err_p, O_CLOEXEC) < 0 ||
        (o->stdin_data && pipe2(in_p, O_CLOEXEC) < 0)) {
        ts_err_set(err, "pipe: %s", strerror(errno));
        for (int i = 0; i < 2; i++) {
            if (out_p[i] >= 0) close(out_p[i]);
            if (err_p[i] >= 0) close(err_p[i]);
            if (in_p[i] >= 0) close(in_p[i]);
        }
        return false;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (o->stdin_data)
        posix_spawn_file_actions_adddup2(&fa, in_p[0], 0);
    else
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out_p[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err_p[1], 2);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    posix_spawnattr_t at;
    proc_spawnattr_init(&at, true);
    pid_t pid;
    char *const *av = (char *const *)o->argv;
    char *const *ev = o->envp ? (char *const *)o->envp : environ;
    int rc = strchr(o->argv[0], '/') ? posix_spawn(&pid, o->argv[0], &fa, &at, av, ev)
                                     : posix_spawnp(&pid, o->argv[0], &fa, &at, av, ev);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(out_p[1]);
    close(err_p[1]);
    if (in_p[0] >= 0) close(in_p[0]);
    if (rc != 0) {
        ts_err_set(err, "cannot run %s: %s", o->argv[0], strerror(rc));
        close(out_p[0]);
        close(err_p[0]);
        if (in_p[1] >= 0) close(in_p[1]);
        return false;
    }
    fcntl(out_p[0], F_SETFL, O_NONBLOCK);
    fcntl(err_p[0], F_SETFL, O_NONBLOCK);
    if (in_p[1] >= 0) fcntl(in_p[1], F_SETFL, O_NONBLOCK);

    size_t cap = o->cap_bytes ? o->cap_bytes : (1u << 20);
    capbuf ob = {.cap = cap}, eb = {.cap = cap};
    int pfd = _pidfd_open(pid);
    int64_t start = ts_now_mono_ms();
    int64_t deadline = o->timeout_ms > 0 ? start + o->timeout_ms : INT64_MAX;
    int64_t drain_until = INT64_MAX; /* set once the child is gone or killed */
    int64_t kill_runner_at = INT64_MAX;
    size_t in_off = 0;
    int fd_out = out_p[0], fd_err = err_p[0], fd_in = in_p[1];
    bool exited = false;
    int status = 0;
    if (fd_in >= 0 && o->stdin_len == 0) {
        close(fd_in);
        fd_in = -1;
    }
    while (fd_out >= 0 || fd_err >= 0 || !exited) {
        int64_t now = ts_now_mono_ms();
        if (!r->timed_out && now >= deadline) {
            r->timed_out = true;
            pid_t inner = _read_pid_file(o->kill_pid_file);
            if (inner > 0) {
                /* Kill the process runc started (and what it started), not
                 * runc: runc reaps it and exits. Killing runc first would
                 * leave that process a zombie for the host's init to reap,
                 * and until then the container's pid namespace cannot end. */
                _kill_tree(inner);
                kill_runner_at = now + 1000;
            } else {
                kill_runner_at = now;
            }
        }
        if (!exited && now >= kill_runner_at) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            kill_runner_at = INT64_MAX;
            if (drain_until == INT64_MAX) drain_until = now + 500;
        }
        if (now >= drain_until && exited) break;
        struct pollfd p[4];
        int n = 0, i_out = -1, i_err = -1, i_in = -1, i_pid = -1;
        if (fd_out >= 0) p[i_out = n++] = (struct pollfd){.fd = fd_out, .events = POLLIN};
        if (fd_err >= 0) p[i_err = n++] = (struct pollfd){.fd = fd_err, .events = POLLIN};
        if (fd_in >= 0) p[i_in = n++] = (struct pollfd){.fd = fd_in, .events = POLLOUT};
        if (!exited && pfd >= 0) p[i_pid = n++] = (struct pollfd){.fd = pfd, .events = POLLIN};
        int64_t until = deadline < drain_until ? deadline : drain_until;
        if (r->timed_out) until = drain_until < kill_runner_at ? drain_until : kill_runner_at;
        int64_t wait = until == INT64_MAX ? 1000 : until - now;
        if (wait > 1000) wait = 1000;
        if (wait < 0) wait = 0;
        if (!exited && pfd < 0 && wait > 50) wait = 50; /* no pidfd: poll waitpid */
        int k = poll(p, (nfds_t)n, (int)wait);
        if (k < 0 && errno != EINTR) break;
        if (i_out >= 0 && p[i_out].revents && !_drain(fd_out, &ob)) {
            close(fd_out);
            fd_out = -1;
        }
        if (i_err >= 0 && p[i_err].revents && !_drain(fd_err, &eb)) {
            close(fd_err);
            fd_err = -1;
        }
        if (i_in >= 0 && p[i_in].revents) {
            ssize_t w = write(fd_in, o->stdin_data + in_off, o->stdin_len - in_off);
            if (w > 0) in_off += (size_t)w;
            if ((w < 0 && errno != EAGAIN && errno != EINTR) || in_off >= o->stdin_len) {
                close(fd_in);
                fd_in = -1;
            }
        }
        if (!exited) {
            pid_t w = waitpid(pid, &status, WNOHANG);
            if (w == pid) {
                exited = true;
                /* Output still open after the program ended: something it
                 * started holds the pipes. Give it a moment, then stop. */
                int64_t t = ts_now_mono_ms() + 200;
                if (t < drain_until) drain_until = t;
            }
        }
    }
    if (fd_in >= 0) close(fd_in);
    if (fd_out >= 0) close(fd_out);
    if (fd_err >= 0) close(fd_err);
    if (!exited) {
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    if (pfd >= 0) close(pfd);
    r->exit_code = r->timed_out ? -1 : _status_code(status);
    r->out = ob.data ? ob.data : ts_strdup("");
    r->out_len = ob.len;
    r->out_truncated = ob.truncated;
    r->err = eb.data ? eb.data : ts_strdup("");
    r->err_len = eb.len;
    r->err_truncated = eb.truncated;
    return true;
}

char *proc_sibling_path(const char *name, ts_err *err)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        ts_err_set(err, "cannot find the agent's own path: %s", strerror(errno));
        return NULL;
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) *slash = '\0';
    return ts_asprintf("%s/%s", self, name);
}

void exec_result_free(exec_result *r)
{
    if (!r) return;
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}
