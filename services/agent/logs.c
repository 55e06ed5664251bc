/* logs.c: the size-capped console log of a kernel (two segments). */
#include "services/agent/logs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOG_DEFAULT_CAP (10LL << 20)

bool logw_open(log_writer *w, const char *dir, int64_t cap_bytes)
{
    if (cap_bytes <= 0) cap_bytes = LOG_DEFAULT_CAP;
    w->seg_cap = cap_bytes / 2 > 0 ? cap_bytes / 2 : 1;
    snprintf(w->path, sizeof(w->path), "%s/output.log", dir);
    snprintf(w->old, sizeof(w->old), "%s/output.log.1", dir);
    w->fd = open(w->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (w->fd < 0) return false;
    struct stat st;
    w->size = fstat(w->fd, &st) == 0 ? st.st_size : 0;
    return true;
}

static void _rotate(log_writer *w)
{
    if (rename(w->path, w->old) < 0 && errno != ENOENT) {
        /* cannot rotate: start the segment over rather than grow past the cap */
        if (ftruncate(w->fd, 0) == 0) w->size = 0;
        return;
    }
    int fd = open(w->path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0640);
    if (fd < 0) return;
    close(w->fd);
    w->fd = fd;
    w->size = 0;
}

void logs_write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return;
        p += k;
        n -= (size_t)k;
    }
}

void logw_write(log_writer *w, const char *p, size_t n)
{
    if (w->fd < 0) return;
    if ((int64_t)n >= w->seg_cap) {
        /* one chunk fills a whole segment: only its tail can be kept */
        _rotate(w);
        p += n - (size_t)w->seg_cap;
        n = (size_t)w->seg_cap;
    }
    while (n > 0) {
        if (w->size >= w->seg_cap) _rotate(w);
        size_t take = (size_t)(w->seg_cap - w->size);
        if (take > n) take = n;
        logs_write_all(w->fd, p, take);
        w->size += (int64_t)take;
        p += take;
        n -= take;
    }
}

void logw_close(log_writer *w)
{
    if (w->fd >= 0) close(w->fd);
    w->fd = -1;
}

/* Append up to want bytes from the end of path to buf (at *len). */
static void _tail_file(const char *path, char *buf, size_t *len, size_t want)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    if (fstat(fd, &st) == 0 && want > 0) {
        off_t from = st.st_size > (off_t)want ? st.st_size - (off_t)want : 0;
        size_t n = (size_t)(st.st_size - from);
        ssize_t k = pread(fd, buf + *len, n, from);
        if (k > 0) *len += (size_t)k;
    }
    close(fd);
}

char *logs_tail(const char *dir, size_t max, size_t *len, ts_err *err)
{
    char cur[512], old[520];
    snprintf(cur, sizeof(cur), "%s/output.log", dir);
    snprintf(old, sizeof(old), "%s/output.log.1", dir);
    struct stat sc, so;
    bool has_cur = stat(cur, &sc) == 0, has_old = stat(old, &so) == 0;
    if (!has_cur && !has_old) {
        struct stat sd;
        if (stat(dir, &sd) < 0) {
            ts_err_set(err, "no such kernel");
            return NULL;
        }
    }
    size_t n_cur = has_cur ? (size_t)sc.st_size : 0;
    size_t n_old = has_old ? (size_t)so.st_size : 0;
    if (n_cur > max) n_cur = max;
    if (n_old > max - n_cur) n_old = max - n_cur;
    char *buf = ts_malloc(n_cur + n_old + 1);
    size_t l = 0;
    /* the segment may grow between stat and read: never read more than planned */
    if (n_old) _tail_file(old, buf, &l, n_old);
    if (n_cur) _tail_file(cur, buf, &l, n_cur);
    buf[l] = '\0';
    if (len) *len = l;
    return buf;
}
