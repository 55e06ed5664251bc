/* home_fs.c: files beneath a kernel's home directory (home_fs.h). */
#include "services/agent/home_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "libcommon/log.h"

#define RESOLVE_HOME (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
#define TAR_DEPTH_MAX 64

static int _openat2(int dirfd, const char *path, int flags, mode_t mode, unsigned long long resolve)
{
    struct open_how how = {.flags = (unsigned long long)(flags | O_CLOEXEC),
                           .mode = (flags & O_CREAT) ? mode : 0,
                           .resolve = resolve};
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

bool home_fs_open(home_fs *h, const char *dir, ts_err *err)
{
    h->fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (h->fd < 0 || fstat(h->fd, &st) != 0) {
        ts_err_set(err, "the kernel's home directory %s: %s", dir, strerror(errno));
        if (h->fd >= 0) close(h->fd);
        h->fd = -1;
        return false;
    }
    h->uid = st.st_uid;
    h->gid = st.st_gid;
    return true;
}

void home_fs_close(home_fs *h)
{
    if (h->fd >= 0) close(h->fd);
    h->fd = -1;
}

bool home_fs_path(const char *in, char *out, size_t out_size, ts_err *err)
{
    const char *p = in ? in : "";
    size_t ml = strlen(HOME_FS_MOUNT);
    if (strncmp(p, HOME_FS_MOUNT, ml) == 0 && (p[ml] == '/' || p[ml] == '\0'))
        p += ml;
    else if (p[0] == '/') {
        ts_err_set(err, "'%.200s' is outside " HOME_FS_MOUNT "; give a path relative to it", in);
        return false;
    }
    size_t n = 0;
    while (*p) {
        while (*p == '/')
            p++;
        size_t len = strcspn(p, "/");
        if (len == 0) break;
        if (len == 1 && p[0] == '.') {
            p += len;
            continue;
        }
        if (len == 2 && p[0] == '.' && p[1] == '.') {
            ts_err_set(err, "'%.200s' has a '..' segment; paths stay within " HOME_FS_MOUNT, in);
            return false;
        }
        for (size_t i = 0; i < len; i++)
            if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f) {
                ts_err_set(err, "a path may not hold control characters");
                return false;
            }
        if (n + (n ? 1 : 0) + len + 1 > out_size) {
            ts_err_set(err, "the path is longer than %zu bytes", out_size - 1);
            return false;
        }
        if (n) out[n++] = '/';
        memcpy(out + n, p, len);
        n += len;
        p += len;
    }
    if (n == 0) out[n++] = '.';
    out[n] = '\0';
    return true;
}

int home_fs_open_at(const home_fs *h, const char *rel, int flags, mode_t mode)
{
    return _openat2(h->fd, rel, flags, mode, RESOLVE_HOME);
}

/* The directory name (one component) in dirfd, made when missing; an O_PATH
 * fd of it, or -1 (errno). Never through a symlink. */
static int _subdir(const home_fs *h, int dirfd, const char *name)
{
    bool made = mkdirat(dirfd, name, 0755) == 0;
    if (!made && errno != EEXIST) return -1;
    int fd = _openat2(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0,
                      RESOLVE_HOME | RESOLVE_NO_SYMLINKS);
    if (fd >= 0 && made && fchownat(fd, "", h->uid, h->gid, AT_EMPTY_PATH) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int home_fs_write_open(const home_fs *h, const char *rel)
{
    if (strcmp(rel, ".") == 0) {
        errno = EISDIR;
        return -1;
    }
    int dirfd = dup(h->fd);
    if (dirfd < 0) return -1;
    const char *p = rel;
    char name[256];
    for (;;) {
        size_t len = strcspn(p, "/");
        if (len >= sizeof(name)) {
            close(dirfd);
            errno = ENAMETOOLONG;
            return -1;
        }
        memcpy(name, p, len);
        name[len] = '\0';
        if (p[len] == '\0') break;
        int next = _subdir(h, dirfd, name);
        int e = errno;
        close(dirfd);
        if (next < 0) {
            errno = e;
            return -1;
        }
        dirfd = next;
        p += len + 1;
    }
    /* O_NONBLOCK: a FIFO must not hang the open; O_NOFOLLOW with
     * RESOLVE_NO_SYMLINKS: never through a symlink. */
    int fd = _openat2(dirfd, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0644,
                      RESOLVE_HOME | RESOLVE_NO_SYMLINKS);
    int e = errno;
    close(dirfd);
    if (fd < 0) {
        errno = e;
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    if (ftruncate(fd, 0) != 0 || fchown(fd, h->uid, h->gid) != 0 || fcntl(fd, F_SETFL, 0) != 0) {
        e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int home_fs_status(int e, const char **type)
{
    switch (e) {
    case ENOENT:
        *type = "file-not-found";
        return 404;
    case EXDEV:
    case ELOOP:
        *type = "path-outside-home";
        return 400;
    case EACCES:
    case EPERM:
        *type = "forbidden";
        return 403;
    case E2BIG:
    case EFBIG:
        *type = "request-too-large";
        return 413;
    case ENOTDIR:
    case EISDIR:
    case EINVAL:
    case ENAMETOOLONG:
        *type = "invalid-api-params";
        return 400;
    default:
        *type = "file-error";
        return 500;
    }
}

/* ---- ustar -------------------------------------------------------------------------- */

static void _octal(char *f, size_t w, unsigned long long v)
{
    snprintf(f, w, "%0*llo", (int)(w - 1), v);
}

/* One ustar header for name (a directory's with its trailing '/'). */
static bool _header(ts_buf *tar, const char *name, const struct stat *st, char type,
                    const char *link, unsigned long long size)
{
    char hd[512];
    memset(hd, 0, sizeof(hd));
    size_t n = strlen(name);
    const char *base = name;
    if (n > 100) { /* split at a '/' into prefix (<= 155) and name (<= 100) */
        const char *cut = NULL;
        for (const char *s = name; *s; s++)
            if (*s == '/' && (size_t)(s - name) <= 155 && strlen(s + 1) <= 100 && s[1]) {
                cut = s;
                break;
            }
        if (!cut) {
            errno = ENAMETOOLONG;
            return false;
        }
        memcpy(hd + 345, name, (size_t)(cut - name));
        base = cut + 1;
    }
    if (link && strlen(link) > 100) {
        errno = ENAMETOOLONG;
        return false;
    }
    memcpy(hd, base, strlen(base));
    _octal(hd + 100, 8, st->st_mode & 07777);
    _octal(hd + 108, 8, 0);
    _octal(hd + 116, 8, 0);
    _octal(hd + 124, 12, size);
    _octal(hd + 136, 12, st->st_mtime > 0 ? (unsigned long long)st->st_mtime : 0);
    hd[156] = type;
    if (link) memcpy(hd + 157, link, strlen(link));
    memcpy(hd + 257, "ustar", 6);
    memcpy(hd + 263, "00", 2);
    memcpy(hd + 265, "work", 4);
    memcpy(hd + 297, "work", 4);
    memset(hd + 148, ' ', 8);
    unsigned sum = 0;
    for (size_t i = 0; i < sizeof(hd); i++)
        sum += (unsigned char)hd[i];
    snprintf(hd + 148, 8, "%06o", sum);
    ts_buf_append(tar, hd, sizeof(hd));
    return true;
}

static bool _room(const ts_buf *tar, unsigned long long more, size_t max)
{
    if (tar->len + 512 + ((more + 511) / 512) * 512 + 1024 > max) {
        errno = E2BIG;
        return false;
    }
    return true;
}

static bool _add(int dirfd, const char *name, const char *arc, ts_buf *tar, size_t max, int depth);

static bool _add_dir(int parent, const char *name, const char *arc, ts_buf *tar, size_t max,
                     int depth)
{
    int fd = _openat2(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0, RESOLVE_HOME);
    if (fd < 0) return false;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        errno = e;
        return false;
    }
    bool ok = true;
    struct dirent *de;
    while (ok && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        char *child =
            strcmp(arc, ".") == 0 ? ts_strdup(de->d_name) : ts_asprintf("%s/%s", arc, de->d_name);
        ok = _add(dirfd(d), de->d_name, child, tar, max, depth + 1);
        free(child);
    }
    int e = errno;
    closedir(d);
    errno = e;
    return ok;
}

static bool _add_file(int dirfd, const char *name, const char *arc, const struct stat *st0,
                      ts_buf *tar, size_t max)
{
    int fd = _openat2(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0, RESOLVE_HOME);
    struct stat st;
    if (fd < 0) return false;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_ino != st0->st_ino) {
        close(fd);
        errno = EINVAL;
        return false;
    }
    unsigned long long size = (unsigned long long)st.st_size;
    if (!_room(tar, size, max) || !_header(tar, arc, &st, '0', NULL, size)) {
        int e = errno;
        close(fd);
        errno = e;
        return false;
    }
    ts_buf_reserve(tar, ((size + 511) / 512) * 512);
    unsigned long long got = 0;
    while (got < size) {
        ssize_t r = read(fd, tar->data + tar->len, (size_t)(size - got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break; /* shrank meanwhile: zeros stand in for the rest */
        tar->len += (size_t)r;
        got += (unsigned long long)r;
    }
    close(fd);
    static const char zeros[512];
    size_t pad = (size_t)(((size + 511) / 512) * 512 - got);
    while (pad) {
        size_t k = pad > sizeof(zeros) ? sizeof(zeros) : pad;
        ts_buf_append(tar, zeros, k);
        pad -= k;
    }
    return true;
}

static bool _add(int dirfd, const char *name, const char *arc, ts_buf *tar, size_t max, int depth)
{
    if (depth > TAR_DEPTH_MAX) {
        errno = ELOOP;
        return false;
    }
    int pfd = _openat2(dirfd, name, O_PATH | O_NOFOLLOW, 0, RESOLVE_HOME);
    struct stat st;
    if (pfd < 0) return false;
    if (fstat(pfd, &st) != 0) {
        int e = errno;
        close(pfd);
        errno = e;
        return false;
    }
    bool ok = true;
    if (S_ISLNK(st.st_mode)) {
        char link[PATH_MAX];
        ssize_t n = readlinkat(pfd, "", link, sizeof(link) - 1);
        if (n >= 0) {
            link[n] = '\0';
            ok = _room(tar, 0, max) && _header(tar, arc, &st, '2', link, 0);
        }
    } else if (S_ISDIR(st.st_mode)) {
        if (strcmp(arc, ".") != 0) {
            char *d = ts_asprintf("%s/", arc);
            ok = _room(tar, 0, max) && _header(tar, d, &st, '5', NULL, 0);
            free(d);
        }
        ok = ok && _add_dir(dirfd, name, arc, tar, max, depth);
    } else if (S_ISREG(st.st_mode)) {
        ok = _add_file(dirfd, name, arc, &st, tar, max);
    } /* devices, FIFOs, sockets: left out */
    int e = errno;
    close(pfd);
    errno = e;
    return ok;
}

bool home_fs_tar(const home_fs *h, const char *rel, ts_buf *tar, size_t max)
{
    return _add(h->fd, rel, rel, tar, max, 0);
}

void home_fs_tar_end(ts_buf *tar)
{
    static const char zeros[1024];
    ts_buf_append(tar, zeros, sizeof(zeros));
}

int home_fs_seed(const char *dir, const home_file *files, int n)
{
    if (n <= 0) return 0;
    home_fs h;
    ts_err err = {{0}};
    if (!home_fs_open(&h, dir, &err)) {
        TLOG_WARN("home files not written", "error=\"%s\"", err.msg);
        return 0;
    }
    int written = 0;
    for (int i = 0; i < n; i++) {
        char rel[HOME_FS_PATH_MAX];
        if (!home_fs_path(files[i].path, rel, sizeof(rel), &err) || strcmp(rel, ".") == 0) {
            TLOG_WARN("home file skipped: bad path", "path=\"%s\"", files[i].path);
            continue;
        }
        int probe = home_fs_open_at(&h, rel, O_PATH | O_NOFOLLOW, 0);
        if (probe >= 0 || errno != ENOENT) {
            if (probe >= 0) close(probe);
            continue; /* there already (or unreachable): left alone */
        }
        int fd = home_fs_write_open(&h, rel);
        bool ok = fd >= 0;
        const char *p = files[i].data;
        size_t left = files[i].len;
        while (ok && left > 0) {
            ssize_t w = write(fd, p, left);
            if (w < 0 && errno == EINTR) continue;
            ok = w > 0;
            if (ok) {
                p += w;
                left -= (size_t)w;
            }
        }
        if (ok) ok = fchmod(fd, (mode_t)(files[i].mode & 0777u)) == 0;
        int e = errno;
        if (fd >= 0) close(fd);
        if (ok) {
            written++;
        } else {
            TLOG_WARN("home file not written", "path=\"%s\" error=\"%s\"", files[i].path,
                      strerror(e));
        }
    }
    home_fs_close(&h);
    return written;
}
