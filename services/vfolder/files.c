/* files.c: file operations confined to a folder's directory (files.h). */
#include "files.h"

#include "libcommon/log.h"
#include "volumes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PATH_MAX_LEN 4095
#define MAX_DEPTH 256 /* recursive delete and mkdir -p */

bool vf_fs_force_fallback = false;

/* ---- resolution -------------------------------------------------------------- */

static int _openat2(int dirfd, const char *path, int flags, mode_t mode)
{
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC),
        .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
    };
    for (;;) {
        long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
        if (fd >= 0) return (int)fd;
        if (errno == EINTR) continue;
        if (errno == EAGAIN) continue; /* a rename raced the lookup: try again */
        return -errno;
    }
}

/* The fallback: one component at a time, never following a symlink, ".."
 * only back down the way we came. */
static int _walk(int root, const char *path, int flags, mode_t mode)
{
    if (path[0] == '/') return -EXDEV;
    char *copy = ts_strdup(path);
    int stack[MAX_DEPTH + 1];
    int depth = 0;
    stack[0] = openat(root, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    int rc = stack[0] < 0 ? -errno : 0;
    char *save = NULL;
    char *comp = rc ? NULL : strtok_r(copy, "/", &save);
    while (comp && rc == 0) {
        char *next = strtok_r(NULL, "/", &save);
        bool last = next == NULL;
        if (strcmp(comp, ".") == 0) {
            /* stay */
        } else if (strcmp(comp, "..") == 0) {
            if (depth == 0) {
                rc = -EXDEV;
                break;
            }
            close(stack[depth--]);
        } else if (!last) {
            if (depth == MAX_DEPTH) {
                rc = -ENAMETOOLONG;
                break;
            }
            int fd = openat(stack[depth], comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (fd < 0) {
                rc = -errno;
                struct stat st;
                if ((rc == -ENOTDIR || rc == -ELOOP) &&
                    fstatat(stack[depth], comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    S_ISLNK(st.st_mode))
                    rc = -EXDEV;
                break;
            }
            stack[++depth] = fd;
        }
        if (last) {
            const char *name = (strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0) ? "." : comp;
            int fd = openat(stack[depth], name, flags | O_NOFOLLOW | O_CLOEXEC, mode);
            if (fd < 0) {
                rc = -errno;
                struct stat st;
                if ((rc == -ELOOP || rc == -ENOTDIR) &&
                    fstatat(stack[depth], name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    S_ISLNK(st.st_mode) && !(flags & O_NOFOLLOW))
                    rc = -EXDEV;
            } else {
                struct stat st;
                if ((flags & O_PATH) && !(flags & O_NOFOLLOW) && fstat(fd, &st) == 0 &&
                    S_ISLNK(st.st_mode)) {
                    close(fd);
                    rc = -EXDEV;
                } else {
                    rc = fd;
                }
            }
            comp = NULL;
            break;
        }
        comp = next;
    }
    if (rc == 0) { /* "" or only "." / "..": the directory we ended in */
        rc = openat(stack[depth], ".", flags | O_CLOEXEC, mode);
        if (rc < 0) rc = -errno;
    }
    for (int i = 0; i <= depth; i++)
        if (stack[i] >= 0) close(stack[i]);
    free(copy);
    return rc;
}

bool vf_fs_path_ok(const char *path)
{
    if (!path) return false;
    size_t n = strlen(path);
    if (n > PATH_MAX_LEN) return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)path[i] < 0x20 || path[i] == 0x7f) return false;
    return true;
}

/* The functions below return what they open, 0 for done, or -errno; the
 * contract's (files.h) are at the end, over them. */

static int _open(int root, const char *path, int flags, mode_t mode)
{
    if (!vf_fs_path_ok(path)) return -EINVAL;
    if (!*path) path = ".";
    if (!vf_fs_force_fallback) {
        int fd = _openat2(root, path, flags, mode);
        if (fd != -ENOSYS) return fd;
        static bool warned;
        if (!warned) {
            warned = true;
            TLOG_WARN("openat2 unavailable; walking paths component by component", "");
        }
    }
    return _walk(root, path, flags, mode);
}

static int _open_parent(int root, const char *path, char **leaf)
{
    *leaf = NULL;
    if (!vf_fs_path_ok(path)) return -EINVAL;
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    char *p = ts_strndup(path, n);
    char *slash = strrchr(p, '/');
    const char *name = slash ? slash + 1 : p;
    if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        int rc = p[0] == '/' ? -EXDEV : -EINVAL;
        free(p);
        return rc;
    }
    char *parent;
    if (!slash)
        parent = ts_strdup(".");
    else if (slash == p)
        parent = ts_strdup("/"); /* absolute: refused by the resolution */
    else
        parent = ts_strndup(p, (size_t)(slash - p));
    int fd = _open(root, parent, O_PATH | O_DIRECTORY, 0);
    if (fd >= 0) *leaf = ts_strdup(name);
    free(parent);
    free(p);
    return fd;
}

/* ---- listing ------------------------------------------------------------------ */

static void _iso(char *out, size_t size, const struct timespec *ts)
{
    struct tm tm;
    gmtime_r(&ts->tv_sec, &tm);
    char base[32];
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, size, "%s.%06ld+00:00", base, ts->tv_nsec / 1000);
}

static int _by_name(const void *a, const void *b)
{
    const char *x = json_string_value(json_object_get(*(json_t *const *)a, "name"));
    const char *y = json_string_value(json_object_get(*(json_t *const *)b, "name"));
    return strcmp(x ? x : "", y ? y : "");
}

bool vf_fs_each(int fd, vf_fs_visit visit, void *arg, int *errnum)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        *errnum = errno;
        close(fd);
        return false;
    }
    struct dirent *e;
    bool more = true;
    while (more && (errno = 0, e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue; /* gone */
        more = visit(dirfd(d), e->d_name, &st, arg);
    }
    *errnum = more ? errno : 0;
    closedir(d);
    return *errnum == 0;
}

typedef struct listing {
    json_t **arr;
    size_t n, cap;
} listing;

static bool _list_one(int dirfd, const char *name, const struct stat *st, void *arg)
{
    (void)dirfd;
    listing *l = arg;
    const char *type = S_ISDIR(st->st_mode)   ? "DIRECTORY"
                       : S_ISLNK(st->st_mode) ? "SYMLINK"
                       : S_ISREG(st->st_mode) ? "FILE"
                                              : NULL;
    if (!type) return true; /* fifos, sockets, devices: not ours to show */
    char created[48], modified[48], mode[8];
    _iso(created, sizeof(created), &st->st_ctim);
    _iso(modified, sizeof(modified), &st->st_mtim);
    snprintf(mode, sizeof(mode), "%o", (unsigned)(st->st_mode & 07777));
    json_t *it =
        json_pack("{s:s, s:s, s:I, s:s, s:s, s:s}", "name", name, "type", type, "size",
                  (json_int_t)st->st_size, "mode", mode, "created", created, "modified", modified);
    if (!it) return true; /* a name that is not UTF-8 */
    if (l->n == l->cap) l->arr = ts_realloc(l->arr, (l->cap *= 2) * sizeof(*l->arr));
    l->arr[l->n++] = it;
    return true;
}

static int _list(int root, const char *path, json_t **items)
{
    *items = NULL;
    int fd = _open(root, path, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0) return fd;
    listing l = {.cap = 64};
    l.arr = ts_malloc(l.cap * sizeof(*l.arr));
    int err = 0;
    bool ok = vf_fs_each(fd, _list_one, &l, &err);
    if (ok) {
        qsort(l.arr, l.n, sizeof(*l.arr), _by_name);
        *items = json_array();
    }
    for (size_t i = 0; i < l.n; i++)
        if (ok)
            json_array_append_new(*items, l.arr[i]);
        else
            json_decref(l.arr[i]);
    free(l.arr);
    return ok ? 0 : -err;
}

/* ---- mkdir, rename, move -------------------------------------------------------- */

/* 0 when path resolves (confined) to a directory, else -errno. */
static int _is_dir(int root, const char *path)
{
    int fd = _open(root, path, O_PATH | O_DIRECTORY, 0);
    if (fd < 0) return fd;
    close(fd);
    return 0;
}

static int _mkdir_one(int root, const char *path, bool exist_ok)
{
    char *leaf;
    int pfd = _open_parent(root, path, &leaf);
    if (pfd < 0) return pfd;
    int rc = mkdirat(pfd, leaf, 0755) == 0 ? 0 : -errno;
    /* the sessions' root may write in it (volumes.h, vfolder.file_owner) */
    if (rc == 0) vf_own_at(pfd, leaf);
    if (rc == -EEXIST && exist_ok) {
        struct stat st;
        /* An existing directory (a symlink to one inside also counts; one
         * pointing out is refused as such). */
        if (fstatat(pfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0) {
            if (S_ISDIR(st.st_mode)) {
                rc = 0;
            } else if (S_ISLNK(st.st_mode)) {
                int d = _is_dir(root, path);
                rc = d == 0 ? 0 : (d == -EXDEV || d == -ELOOP) ? d : -EEXIST;
            }
        }
    }
    close(pfd);
    free(leaf);
    return rc;
}

static int _mkdir(int root, const char *path, bool parents, bool exist_ok)
{
    if (!vf_fs_path_ok(path) || !*path) return -EINVAL;
    if (!parents) return _mkdir_one(root, path, exist_ok);
    /* Each prefix in turn, every one resolved confined again. */
    char *p = ts_strdup(path);
    int rc = 0, depth = 0;
    for (char *s = p + (p[0] == '/' ? 1 : 0);; s++) {
        if (*s == '/' || *s == '\0') {
            char saved = *s;
            *s = '\0';
            size_t len = strlen(p);
            bool empty = len == 0 || p[len - 1] == '/'; /* "a//b" */
            if (!empty && ++depth > MAX_DEPTH) {
                rc = -ENAMETOOLONG;
            } else if (!empty) {
                rc = _mkdir_one(root, p, saved != '\0' || exist_ok);
                if (rc == -EINVAL && saved != '\0') rc = 0; /* "a/../b", "a/./b" */
            }
            *s = saved;
            if (rc || saved == '\0') break;
        }
    }
    free(p);
    return rc;
}

static bool _plain_name(const char *name)
{
    return name && *name && !strchr(name, '/') && strcmp(name, ".") != 0 &&
           strcmp(name, "..") != 0 && strlen(name) <= 255 && vf_fs_path_ok(name);
}

static int _rename_noreplace(int sfd, const char *sname, int dfd, const char *dname)
{
    if (renameat2(sfd, sname, dfd, dname, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL) return -errno;
    /* File systems without RENAME_NOREPLACE (some NFS): check, then rename. */
    struct stat st;
    if (fstatat(dfd, dname, &st, AT_SYMLINK_NOFOLLOW) == 0) return -EEXIST;
    return renameat(sfd, sname, dfd, dname) == 0 ? 0 : -errno;
}

static int _rename(int root, const char *path, const char *new_name)
{
    if (!_plain_name(new_name)) return -EINVAL;
    char *leaf;
    int pfd = _open_parent(root, path, &leaf);
    if (pfd < 0) return pfd;
    int rc = _rename_noreplace(pfd, leaf, pfd, new_name);
    close(pfd);
    free(leaf);
    return rc;
}

static int _move(int root, const char *src, const char *dst)
{
    if (!vf_fs_path_ok(dst) || !*dst) return -EINVAL;
    char *sleaf, *dleaf = NULL;
    int sfd = _open_parent(root, src, &sleaf);
    if (sfd < 0) return sfd;
    int dfd = _open(root, dst, O_PATH | O_DIRECTORY, 0);
    if (dfd >= 0) {
        dleaf = ts_strdup(sleaf); /* into the existing directory */
    } else if (dfd == -ENOENT || dfd == -ENOTDIR) {
        dfd = _open_parent(root, dst, &dleaf);
    }
    int rc = dfd;
    if (dfd >= 0) {
        rc = _rename_noreplace(sfd, sleaf, dfd, dleaf);
        close(dfd);
    }
    close(sfd);
    free(sleaf);
    free(dleaf);
    return rc;
}

/* ---- delete ----------------------------------------------------------------------- */

/* Remove name under pfd and everything below it, never following a symlink. */
static int _rm_tree(int pfd, const char *name, int depth, int64_t *freed)
{
    if (depth > MAX_DEPTH) return -ENAMETOOLONG;
    int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == ENOTDIR || e == ELOOP) /* not (or no longer) a directory: the entry itself */
            return unlinkat(pfd, name, 0) == 0 || errno == ENOENT ? 0 : -errno;
        return e == ENOENT ? 0 : -e;
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        return -e;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        struct stat st;
        if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            rc = _rm_tree(fd, e->d_name, depth + 1, freed);
        } else if (unlinkat(fd, e->d_name, 0) == 0) {
            if (S_ISREG(st.st_mode) && freed) *freed += st.st_size;
        } else if (errno == EISDIR) { /* swapped for a directory meanwhile */
            rc = _rm_tree(fd, e->d_name, depth + 1, freed);
        } else if (errno != ENOENT) {
            rc = -errno;
        }
    }
    closedir(d);
    if (rc) return rc;
    if (unlinkat(pfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT) return -errno;
    return 0;
}

static int _delete(int root, const char *path, bool recursive, int64_t *freed)
{
    if (freed) *freed = 0;
    char *leaf;
    int pfd = _open_parent(root, path, &leaf);
    if (pfd < 0) return pfd;
    struct stat st;
    int rc = 0;
    if (fstatat(pfd, leaf, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        rc = -errno;
    } else if (S_ISDIR(st.st_mode)) {
        if (recursive)
            rc = _rm_tree(pfd, leaf, 0, freed);
        else if (unlinkat(pfd, leaf, AT_REMOVEDIR) != 0)
            rc = errno == EEXIST ? -ENOTEMPTY : -errno;
    } else if (unlinkat(pfd, leaf, 0) != 0) {
        rc = -errno;
        if (rc == -EISDIR && recursive) rc = _rm_tree(pfd, leaf, 0, freed);
    } else if (S_ISREG(st.st_mode) && freed) {
        *freed = st.st_size;
    }
    close(pfd);
    free(leaf);
    return rc;
}

/* ---- the contract: false and the errno value ------------------------------------------ */

static bool _done(int rc, int *errnum)
{
    *errnum = rc < 0 ? -rc : 0;
    return rc >= 0;
}

static bool _opened(int rc, int *fd, int *errnum)
{
    *fd = rc < 0 ? -1 : rc;
    return _done(rc, errnum);
}

bool vf_fs_open_root(const char *host_path, int *fd, int *errnum)
{
    int rc = open(host_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    return _opened(rc < 0 ? -errno : rc, fd, errnum);
}

bool vf_fs_open(int root, const char *path, int flags, mode_t mode, int *fd, int *errnum)
{
    return _opened(_open(root, path, flags, mode), fd, errnum);
}

bool vf_fs_open_parent(int root, const char *path, int *fd, char **leaf, int *errnum)
{
    return _opened(_open_parent(root, path, leaf), fd, errnum);
}

bool vf_fs_list(int root, const char *path, json_t **items, int *errnum)
{
    return _done(_list(root, path, items), errnum);
}

bool vf_fs_mkdir(int root, const char *path, bool parents, bool exist_ok, int *errnum)
{
    return _done(_mkdir(root, path, parents, exist_ok), errnum);
}

bool vf_fs_rename(int root, const char *path, const char *new_name, int *errnum)
{
    return _done(_rename(root, path, new_name), errnum);
}

bool vf_fs_move(int root, const char *src, const char *dst, int *errnum)
{
    return _done(_move(root, src, dst), errnum);
}

bool vf_fs_delete(int root, const char *path, bool recursive, int64_t *freed, int *errnum)
{
    return _done(_delete(root, path, recursive, freed), errnum);
}

/* ---- answers ------------------------------------------------------------------------ */

#define OUTSIDE                                                                                    \
    "the path leads outside the folder (\"..\", an absolute path or a symlink pointing out)"

void vf_fs_problem(http_resp *resp, int errnum, const char *what, const char *path)
{
    static const struct {
        int errnum, status;
        const char *kind, *text;
    } known[] = {
        {ENOENT, 404, "vfolder-file-not-found", "no such file or directory"},
        {EXDEV, 400, "invalid-api-params", OUTSIDE},
        {ELOOP, 400, "invalid-api-params", OUTSIDE},
        {EEXIST, 409, "vfolder-file-exists", "already exists"},
        {ENOTEMPTY, 409, "vfolder-not-empty", "the directory is not empty (set recursive)"},
        {ENOTDIR, 400, "invalid-api-params", "not a directory"},
        {EISDIR, 400, "invalid-api-params", "is a directory"},
        {EINVAL, 400, "invalid-api-params", "invalid path or name"},
        {ENAMETOOLONG, 400, "invalid-api-params", "invalid path or name"},
        {EACCES, 403, "forbidden", "permission denied on the volume"},
        {EPERM, 403, "forbidden", "permission denied on the volume"},
        {ENOSPC, 507, "insufficient-storage", "the volume is full"},
        {EDQUOT, 507, "insufficient-storage", "the volume is full"},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(known); i++)
        if (known[i].errnum == errnum) {
            http_problem(resp, known[i].status, known[i].kind, NULL, "%s: %s: %s", what,
                         known[i].text, path ? path : "");
            return;
        }
    TLOG_ERROR("file operation failed", "what=%s errno=%d error=\"%s\"", what, errnum,
               strerror(errnum));
    http_problem(resp, 500, "internal-server-error", NULL, "%s: %s", what, strerror(errnum));
}
