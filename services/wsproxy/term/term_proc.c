/* term_proc.c: a process group waiting for input on a pipe (term_proc.h). */
#include "services/wsproxy/term/term_proc.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
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

bool term_proc_syscall(const char *line, long *nr, unsigned long long *arg0)
{
    char *end;
    while (*line == ' ')
        line++;
    if (!isdigit((unsigned char)*line)) return false; /* "running", "-1 ..." */
    long n = strtol(line, &end, 10);
    if (end == line || *end != ' ') return false;
    const char *a = end + 1;
    if (a[0] != '0' || a[1] != 'x') return false;
    unsigned long long v = strtoull(a + 2, &end, 16);
    if (end == a + 2) return false;
    *nr = n;
    *arg0 = v;
    return true;
}

bool term_proc_is_read(long nr)
{
    return nr == SYS_read || nr == SYS_readv;
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
    char path[96];
    struct stat st;
    snprintf(path, sizeof(path), "/proc/%s/fd/%llu", pid, fd);
    return stat(path, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

/* Whether a thread of process pid is blocked reading the pipe. */
static bool _process_reads(const char *pid, dev_t dev, ino_t ino)
{
    char path[96];
    snprintf(path, sizeof(path), "/proc/%s/task", pid);
    DIR *d = opendir(path);
    if (!d) return false;
    bool reads = false;
    struct dirent *e;
    while (!reads && (e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0])) continue;
        char line[512];
        long nr;
        unsigned long long arg0;
        snprintf(path, sizeof(path), "/proc/%s/task/%s/syscall", pid, e->d_name);
        if (_read_line(path, line, sizeof(line))) {
            reads = term_proc_syscall(line, &nr, &arg0) && term_proc_is_read(nr) &&
                    _fd_is(pid, arg0, dev, ino);
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
        char path[64], line[512];
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
