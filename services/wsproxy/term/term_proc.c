/* term_proc.c: a process group waiting for input on a pipe (term_proc.h). */
#include "services/wsproxy/term/term_proc.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

bool term_proc_stat_pgrp(const char *stat, long *pgrp)
{
    const char *p = strrchr(stat, ')');
    if (!p) return false;
    char state;
    long ppid, pg;
    if (sscanf(p + 1, " %c %ld %ld", &state, &ppid, &pg) != 3) return false;
    *pgrp = pg;
    return true;
}

bool term_proc_syscall(const char *line, long *nr, unsigned long long args[6])
{
    char *end;
    while (*line == ' ')
        line++;
    if (!isdigit((unsigned char)*line)) return false; /* "running", "-1 ..." */
    long n = strtol(line, &end, 10);
    for (int i = 0; i < 6; i++) {
        if (end[0] != ' ' || end[1] != '0' || end[2] != 'x') return false;
        const char *a = end + 3;
        args[i] = strtoull(a, &end, 16);
        if (end == a) return false;
    }
    *nr = n;
    return true;
}

term_proc_wait term_proc_wait_kind(long nr)
{
    if (nr == SYS_read || nr == SYS_readv) return TP_READ;
#ifdef SYS_poll
    if (nr == SYS_poll) return TP_POLL;
#endif
    if (nr == SYS_ppoll) return TP_POLL;
#ifdef SYS_select
    if (nr == SYS_select) return TP_SELECT;
#endif
    if (nr == SYS_pselect6) return TP_SELECT;
#ifdef SYS_epoll_wait
    if (nr == SYS_epoll_wait) return TP_EPOLL;
#endif
#ifdef SYS_epoll_pwait2
    if (nr == SYS_epoll_pwait2) return TP_EPOLL;
#endif
    if (nr == SYS_epoll_pwait) return TP_EPOLL;
    return TP_OTHER;
}

int term_proc_epoll_fds(const char *fdinfo, int *fds, int max)
{
    int k = 0;
    for (const char *l = fdinfo; l && *l && k < max; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        int fd;
        unsigned events;
        if (strncmp(l, "tfd:", 4) == 0 && sscanf(l, "tfd: %d events: %x", &fd, &events) == 2 &&
            fd >= 0 && (events & 0x1)) /* EPOLLIN */
            fds[k++] = fd;
    }
    return k;
}

int term_proc_poll_fds(const void *pollfds, size_t n, int *fds, int max)
{
    int k = 0;
    for (size_t i = 0; i < n && k < max; i++) {
        struct pollfd p;
        memcpy(&p, (const char *)pollfds + i * sizeof(p), sizeof(p));
        if (p.fd >= 0 && (p.events & POLLIN)) fds[k++] = p.fd;
    }
    return k;
}

int term_proc_select_fds(const unsigned char *set, int nfds, int *fds, int max)
{
    int k = 0;
    for (int fd = 0; fd < nfds && k < max; fd++)
        if (set[fd / 8] & (1u << (fd % 8))) fds[k++] = fd;
    return k;
}

bool term_proc_wchan_pipe_read(const char *wchan)
{
    return strcmp(wchan, "pipe_read") == 0 || strcmp(wchan, "pipe_wait") == 0 ||
           strcmp(wchan, "pipe_wait_readable") == 0;
}

/* The first line of a small /proc file, without its newline; false when it
 * cannot be read. */
static bool _read_line(const char *path, char *out, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = read(fd, out, size - 1);
    close(fd);
    if (n <= 0) return false;
    out[n] = '\0';
    char *nl = strchr(out, '\n');
    if (nl) *nl = '\0';
    return true;
}

static bool _fd_is(const char *pid, unsigned long long fd, dev_t dev, ino_t ino)
{
    char path[320];
    struct stat st;
    snprintf(path, sizeof(path), "/proc/%s/fd/%llu", pid, fd);
    return stat(path, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

#define MAX_WAIT_FDS 1024

/* Whether a thread blocked in the syscall of a /proc/<pid>/syscall line waits
 * to read the pipe. */
static bool _waits_on(const char *pid, const char *line, dev_t dev, ino_t ino)
{
    long nr;
    unsigned long long a[6];
    if (!term_proc_syscall(line, &nr, a)) return false;
    term_proc_wait kind = term_proc_wait_kind(nr);
    if (kind == TP_READ) return _fd_is(pid, a[0], dev, ino);
    if (kind == TP_OTHER) return false;
    int fds[MAX_WAIT_FDS];
    if (kind == TP_EPOLL) {
        static char info[65536];
        char path[320];
        snprintf(path, sizeof(path), "/proc/%s/fdinfo/%llu", pid, a[0]);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return false;
        ssize_t got = read(fd, info, sizeof(info) - 1);
        close(fd);
        if (got <= 0) return false;
        info[got] = '\0';
        int n = term_proc_epoll_fds(info, fds, MAX_WAIT_FDS);
        for (int i = 0; i < n; i++)
            if (_fd_is(pid, (unsigned long long)fds[i], dev, ino)) return true;
        return false;
    }
    /* the pollfd array or the read set, from the process's memory */
    size_t size = kind == TP_POLL ? a[1] * sizeof(struct pollfd) : (a[0] + 7) / 8;
    unsigned long long addr = kind == TP_POLL ? a[0] : a[1];
    if (addr == 0 || a[kind == TP_POLL ? 1 : 0] > MAX_WAIT_FDS || size == 0) return false;
    static unsigned char mem[MAX_WAIT_FDS * sizeof(struct pollfd)];
    char path[320];
    snprintf(path, sizeof(path), "/proc/%s/mem", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t got = pread(fd, mem, size, (off_t)addr);
    close(fd);
    if (got != (ssize_t)size) return false;
    int n = kind == TP_POLL ? term_proc_poll_fds(mem, a[1], fds, MAX_WAIT_FDS)
                            : term_proc_select_fds(mem, (int)a[0], fds, MAX_WAIT_FDS);
    for (int i = 0; i < n; i++)
        if (_fd_is(pid, (unsigned long long)fds[i], dev, ino)) return true;
    return false;
}

/* Whether a thread of process pid is blocked reading the pipe. */
static bool _process_reads(const char *pid, dev_t dev, ino_t ino)
{
    char path[600];
    snprintf(path, sizeof(path), "/proc/%s/task", pid);
    DIR *d = opendir(path);
    if (!d) return false;
    bool reads = false;
    struct dirent *e;
    while (!reads && (e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0])) continue;
        char line[512];
        snprintf(path, sizeof(path), "/proc/%s/task/%s/syscall", pid, e->d_name);
        if (_read_line(path, line, sizeof(line))) {
            reads = _waits_on(pid, line, dev, ino);
            continue;
        }
        snprintf(path, sizeof(path), "/proc/%s/task/%s/wchan", pid, e->d_name);
        reads = _read_line(path, line, sizeof(line)) && term_proc_wchan_pipe_read(line) &&
                _fd_is(pid, 0, dev, ino);
    }
    closedir(d);
    return reads;
}

bool term_proc_group_reads(pid_t pgid, dev_t dev, ino_t ino)
{
    DIR *d = opendir("/proc");
    if (!d) return false;
    bool reads = false;
    struct dirent *e;
    while (!reads && (e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0])) continue;
        char path[300], line[512];
        long pg;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        if (!_read_line(path, line, sizeof(line)) || !term_proc_stat_pgrp(line, &pg) ||
            pg != (long)pgid)
            continue;
        reads = _process_reads(e->d_name, dev, ino);
    }
    closedir(d);
    return reads;
}
