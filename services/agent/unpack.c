/* unpack.c: a layer tar into a directory, safely (see unpack.h).
 *
 * Two libarchive readers are chained: the outer one ("raw" format, every
 * filter) decompresses the blob; the inner one (tar) reads the uncompressed
 * bytes through a callback that hashes them, which gives the layer's diff_id
 * in the same pass. Entries are created with *at() calls relative to directory
 * descriptors that were opened one component at a time with O_NOFOLLOW. */
#include "services/agent/unpack.h"
#include "libcommon/log.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#define FEED_BUF (256 * 1024)
#define WH_PREFIX ".wh."
#define WH_OPAQUE ".wh..wh..opq"
#define OVL_OPAQUE_XATTR "trusted.overlay.opaque"

typedef struct dir_meta {
    char *path; /* clean relative path; "" = the root */
    mode_t mode;
    uid_t uid;
    gid_t gid;
    struct timespec mtime;
} dir_meta;

typedef struct unpacker {
    int root_fd;
    bool as_root;     /* euid 0: owners are applied */
    unpack_ids ids;   /* owner shift; count 0: none */
    char *cache_path; /* parent directory of the previous entry, and its fd */
    int cache_fd;
    dir_meta *dirs;
    size_t n_dirs, cap_dirs;
    bool root_meta_seen;
    bool xattr_warned;
    unpack_stats *stats;
} unpacker;

typedef struct feed {
    struct archive *outer;
    digest_ctx d;
    char *buf;
} feed;

static la_ssize_t _feed_read(struct archive *a, void *cd, const void **buf)
{
    feed *f = cd;
    la_ssize_t n = archive_read_data(f->outer, f->buf, FEED_BUF);
    if (n < 0) {
        archive_set_error(a, archive_errno(f->outer) ? archive_errno(f->outer) : EIO, "%s",
                          archive_error_string(f->outer) ? archive_error_string(f->outer)
                                                         : "decompression failed");
        return -1;
    }
    digest_update(&f->d, f->buf, (size_t)n);
    *buf = f->buf;
    return n;
}

/* The owner on disk of layer id `id` (unpack_ids). */
static uint32_t _host_id(unpacker *u, uint32_t id)
{
    if (!u->ids.count) return id;
    if (id >= u->ids.count) {
        u->stats->ids_clamped++;
        id = u->ids.count > 65534 ? 65534 : u->ids.count - 1;
    }
    return u->ids.base + id;
}

/* chown fd to the shifted root (directories the tar does not describe). */
static bool _own_as_root(unpacker *u, int fd)
{
    if (!u->as_root || !u->ids.count) return true;
    uint32_t r = u->ids.base;
    return fchown(fd, r, r) == 0;
}

/* ---- paths ------------------------------------------------------------------ */

/* Entry name -> clean relative path: leading '/' removed, empty and "."
 * components dropped; a ".." component is refused. */
static bool _clean_path(const char *in, char **out, const char *entry, ts_err *err)
{
    size_t n = strlen(in);
    char *o = ts_malloc(n + 1);
    size_t ol = 0;
    const char *p = in;
    while (*p) {
        while (*p == '/')
            p++;
        if (!*p) break;
        const char *e = strchr(p, '/');
        size_t cl = e ? (size_t)(e - p) : strlen(p);
        if (cl == 1 && p[0] == '.') {
            /* skip */
        } else if (cl == 2 && p[0] == '.' && p[1] == '.') {
            free(o);
            ts_err_set(err, "entry '%s' escapes the layer root ('..' component)", entry);
            return false;
        } else {
            if (cl > NAME_MAX) {
                free(o);
                ts_err_set(err, "entry '%.200s': name component too long", entry);
                return false;
            }
            if (ol) o[ol++] = '/';
            memcpy(o + ol, p, cl);
            ol += cl;
        }
        p += cl;
    }
    o[ol] = '\0';
    if (ol >= PATH_MAX) {
        free(o);
        ts_err_set(err, "entry '%.200s...': path too long", entry);
        return false;
    }
    *out = o;
    return true;
}

static void _cache_drop(unpacker *u)
{
    if (u->cache_fd >= 0) close(u->cache_fd);
    u->cache_fd = -1;
    free(u->cache_path);
    u->cache_path = NULL;
}

/* Open directory `dir` (clean relative path, "" = root) below the root, one
 * component at a time, never following a symlink. create: make missing
 * components (0755). Returns an owned fd, or -1 (err set). */
static int _open_dir(unpacker *u, const char *dir, bool create, const char *entry, ts_err *err)
{
    int fd = dup(u->root_fd);
    if (fd < 0) {
        ts_err_set(err, "dup: %s", strerror(errno));
        return -1;
    }
    const char *p = dir;
    char comp[NAME_MAX + 1];
    while (*p) {
        const char *e = strchr(p, '/');
        size_t cl = e ? (size_t)(e - p) : strlen(p);
        memcpy(comp, p, cl);
        comp[cl] = '\0';
        int nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (nfd < 0 && errno == ENOENT && create) {
            if (mkdirat(fd, comp, 0755) == 0 || errno == EEXIST) {
                nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (nfd >= 0) {
                    (void)fchmod(nfd, 0755);
                    (void)_own_as_root(u, nfd);
                }
            }
        }
        if (nfd < 0) {
            int saved = errno;
            struct stat st;
            size_t upto = (size_t)(p - dir) + cl;
            if (fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                ts_err_set(err, "entry '%s' escapes the layer root (through symlink '%.*s')", entry,
                           (int)upto, dir);
            else if (saved == ENOTDIR || saved == ELOOP)
                ts_err_set(err, "entry '%s': '%.*s' is not a directory", entry, (int)upto, dir);
            else
                ts_err_set(err, "entry '%s': %.*s: %s", entry, (int)upto, dir, strerror(saved));
            close(fd);
            return -1;
        }
        close(fd);
        fd = nfd;
        p += cl;
        if (*p == '/') p++;
    }
    return fd;
}

/* Borrowed fd of the parent directory of clean path `path`; *name gets the
 * last component. Valid until the next call or _cache_drop. */
static int _parent_fd(unpacker *u, const char *path, const char **name, const char *entry,
                      ts_err *err)
{
    const char *slash = strrchr(path, '/');
    *name = slash ? slash + 1 : path;
    if (!slash) return u->root_fd;
    size_t pl = (size_t)(slash - path);
    if (u->cache_path && strlen(u->cache_path) == pl && memcmp(u->cache_path, path, pl) == 0)
        return u->cache_fd;
    _cache_drop(u);
    char *parent = ts_strndup(path, pl);
    int fd = _open_dir(u, parent, true, entry, err);
    if (fd < 0) {
        free(parent);
        return -1;
    }
    u->cache_path = parent;
    u->cache_fd = fd;
    return fd;
}

/* Remove whatever is at pfd/name so a new entry can take the name. A
 * non-empty directory is not replaced. */
static bool _make_room(unpacker *u, int pfd, const char *name, const char *entry, ts_err *err)
{
    struct stat st;
    if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return true;
    _cache_drop(u);
    if (unlinkat(pfd, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) == 0) return true;
    ts_err_set(err, "entry '%s': cannot replace the existing %s: %s", entry,
               S_ISDIR(st.st_mode) ? "directory" : "file", strerror(errno));
    return false;
}

/* ---- metadata ----------------------------------------------------------------- */

static bool _xattr_allowed(const char *name)
{
    /* A layer must not steer overlayfs (opaque, redirect, metacopy ...). */
    return strncmp(name, "trusted.overlay.", 16) != 0 && strncmp(name, "user.overlay.", 13) != 0;
}

static void _apply_xattrs(unpacker *u, int fd, struct archive_entry *e, const char *entry)
{
    const char *xname;
    const void *xval;
    size_t xsize;
    if (archive_entry_xattr_reset(e) == 0) return;
    while (archive_entry_xattr_next(e, &xname, &xval, &xsize) == ARCHIVE_OK) {
        if (!_xattr_allowed(xname)) {
            TLOG_WARN("layer entry xattr ignored", "entry=%s xattr=%s", entry, xname);
            continue;
        }
        if (fsetxattr(fd, xname, xval, xsize, 0) != 0 && !u->xattr_warned) {
            u->xattr_warned = true;
            TLOG_WARN("cannot set xattr (further ones not reported)",
                      "entry=%s xattr=%s error=\"%s\"", entry, xname, strerror(errno));
        }
    }
}

static bool _apply_fd_meta(unpacker *u, int fd, mode_t mode, uid_t uid, gid_t gid,
                           struct timespec mtime, const char *entry, ts_err *err)
{
    if (u->as_root && fchown(fd, _host_id(u, uid), _host_id(u, gid)) != 0) {
        ts_err_set(err, "entry '%s': chown: %s", entry, strerror(errno));
        return false;
    }
    /* after chown: chown clears set-id bits */
    if (fchmod(fd, mode & 07777) != 0) {
        ts_err_set(err, "entry '%s': chmod: %s", entry, strerror(errno));
        return false;
    }
    struct timespec ts[2] = {mtime, mtime};
    if (futimens(fd, ts) != 0) {
        ts_err_set(err, "entry '%s': utimens: %s", entry, strerror(errno));
        return false;
    }
    return true;
}

static struct timespec _entry_mtime(struct archive_entry *e)
{
    struct timespec t = {0, 0};
    if (archive_entry_mtime_is_set(e)) {
        t.tv_sec = archive_entry_mtime(e);
        t.tv_nsec = archive_entry_mtime_nsec(e);
    }
    return t;
}

/* ---- entry kinds ---------------------------------------------------------------- */

static bool _whiteout(unpacker *u, int pfd, const char *name, const char *path, const char *entry,
                      ts_err *err)
{
    if (strcmp(name, WH_OPAQUE) == 0) {
        if (fsetxattr(pfd, OVL_OPAQUE_XATTR, "y", 1, 0) != 0) {
            ts_err_set(err, "entry '%s': cannot mark the directory opaque (%s): %s", entry,
                       OVL_OPAQUE_XATTR, strerror(errno));
            return false;
        }
        return true;
    }
    const char *target = name + strlen(WH_PREFIX);
    if (!*target || strncmp(target, WH_PREFIX, strlen(WH_PREFIX)) == 0 ||
        strcmp(target, ".") == 0 || strcmp(target, "..") == 0) {
        TLOG_WARN("layer entry skipped: unknown whiteout", "entry=%s", entry);
        u->stats->skipped++;
        return true;
    }
    (void)path;
    if (!_make_room(u, pfd, target, entry, err)) return false;
    if (mknodat(pfd, target, S_IFCHR | 0000, makedev(0, 0)) != 0) {
        ts_err_set(err, "entry '%s': cannot create the overlay whiteout: %s", entry,
                   strerror(errno));
        return false;
    }
    return true;
}

static bool _regular(unpacker *u, struct archive *a, struct archive_entry *e, int pfd,
                     const char *name, const char *entry, ts_err *err)
{
    if (!_make_room(u, pfd, name, entry, err)) return false;
    int fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        ts_err_set(err, "entry '%s': create: %s", entry, strerror(errno));
        return false;
    }
    for (;;) {
        const void *buf;
        size_t size;
        la_int64_t off;
        int r = archive_read_data_block(a, &buf, &size, &off);
        if (r == ARCHIVE_EOF) break;
        if (r < ARCHIVE_WARN) {
            ts_err_set(err, "entry '%s': %s", entry, archive_error_string(a));
            close(fd);
            return false;
        }
        const char *b = buf;
        while (size > 0) {
            ssize_t w = pwrite(fd, b, size, off);
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) {
                ts_err_set(err, "entry '%s': write: %s", entry, strerror(errno));
                close(fd);
                return false;
            }
            b += w;
            size -= (size_t)w;
            off += w;
        }
    }
    if (archive_entry_size_is_set(e) && ftruncate(fd, archive_entry_size(e)) != 0) {
        ts_err_set(err, "entry '%s': truncate: %s", entry, strerror(errno));
        close(fd);
        return false;
    }
    _apply_xattrs(u, fd, e, entry);
    bool ok = _apply_fd_meta(u, fd, archive_entry_perm(e), archive_entry_uid(e),
                             archive_entry_gid(e), _entry_mtime(e), entry, err);
    close(fd);
    return ok;
}

static bool _directory(unpacker *u, struct archive_entry *e, int pfd, const char *name,
                       const char *path, const char *entry, ts_err *err)
{
    if (*path) {
        struct stat st;
        if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
            if (!_make_room(u, pfd, name, entry, err)) return false;
        }
        if (mkdirat(pfd, name, 0700) != 0 && errno != EEXIST) {
            ts_err_set(err, "entry '%s': mkdir: %s", entry, strerror(errno));
            return false;
        }
        if (archive_entry_xattr_count(e) > 0) {
            int dfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (dfd >= 0) {
                _apply_xattrs(u, dfd, e, entry);
                close(dfd);
            }
        }
    } else {
        u->root_meta_seen = true;
    }
    if (u->n_dirs == u->cap_dirs) {
        u->cap_dirs = u->cap_dirs ? 2 * u->cap_dirs : 256;
        u->dirs = ts_realloc(u->dirs, u->cap_dirs * sizeof(*u->dirs));
    }
    dir_meta *m = &u->dirs[u->n_dirs++];
    m->path = ts_strdup(path);
    m->mode = archive_entry_perm(e);
    m->uid = archive_entry_uid(e);
    m->gid = archive_entry_gid(e);
    m->mtime = _entry_mtime(e);
    return true;
}

static bool _symlink(unpacker *u, struct archive_entry *e, int pfd, const char *name,
                     const char *entry, ts_err *err)
{
    const char *target = archive_entry_symlink(e);
    if (!target || !*target) {
        ts_err_set(err, "entry '%s': symlink without a target", entry);
        return false;
    }
    if (!_make_room(u, pfd, name, entry, err)) return false;
    if (symlinkat(target, pfd, name) != 0) {
        ts_err_set(err, "entry '%s': symlink: %s", entry, strerror(errno));
        return false;
    }
    if (u->as_root &&
        fchownat(pfd, name, _host_id(u, (uint32_t)archive_entry_uid(e)),
                 _host_id(u, (uint32_t)archive_entry_gid(e)), AT_SYMLINK_NOFOLLOW) != 0) {
        ts_err_set(err, "entry '%s': lchown: %s", entry, strerror(errno));
        return false;
    }
    struct timespec ts[2] = {_entry_mtime(e), _entry_mtime(e)};
    (void)utimensat(pfd, name, ts, AT_SYMLINK_NOFOLLOW);
    return true;
}

static bool _hardlink(unpacker *u, const char *link_target, const char *path, const char *entry,
                      ts_err *err)
{
    char *tpath = NULL;
    ts_err terr = {{0}};
    if (!_clean_path(link_target, &tpath, link_target, &terr) || !*tpath) {
        ts_err_set(err, "entry '%s' escapes the layer root (hard link to '%s')", entry,
                   link_target);
        free(tpath);
        return false;
    }
    if (strcmp(tpath, path) == 0) {
        free(tpath);
        return true;
    }
    const char *tname;
    int tpfd = _parent_fd(u, tpath, &tname, entry, &terr);
    if (tpfd < 0) {
        ts_err_set(err, "entry '%s': hard link to '%s': %s", entry, link_target, terr.msg);
        free(tpath);
        return false;
    }
    int tpfd_own = dup(tpfd);
    char *tname_own = ts_strdup(tname);
    free(tpath);
    bool ok = false;
    const char *name;
    int pfd = tpfd_own < 0 ? -1 : _parent_fd(u, path, &name, entry, err);
    if (tpfd_own < 0) ts_err_set(err, "dup: %s", strerror(errno));
    if (pfd >= 0) {
        struct stat st;
        if (fstatat(tpfd_own, tname_own, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            ts_err_set(err, "entry '%s': hard link target '%s' is not in the layer", entry,
                       link_target);
        } else if (S_ISDIR(st.st_mode)) {
            ts_err_set(err, "entry '%s': hard link to the directory '%s'", entry, link_target);
        } else if (_make_room(u, pfd, name, entry, err)) {
            /* _make_room may have dropped the cache: reopen the parent */
            pfd = _parent_fd(u, path, &name, entry, err);
            if (pfd >= 0) {
                /* flags 0: a symlink target is linked itself, never followed */
                if (linkat(tpfd_own, tname_own, pfd, name, 0) == 0)
                    ok = true;
                else
                    ts_err_set(err, "entry '%s': link to '%s': %s", entry, link_target,
                               strerror(errno));
            }
        }
    }
    if (tpfd_own >= 0) close(tpfd_own);
    free(tname_own);
    return ok;
}

static bool _fifo(unpacker *u, struct archive_entry *e, int pfd, const char *name,
                  const char *entry, ts_err *err)
{
    if (!_make_room(u, pfd, name, entry, err)) return false;
    if (mkfifoat(pfd, name, 0600) != 0) {
        ts_err_set(err, "entry '%s': mkfifo: %s", entry, strerror(errno));
        return false;
    }
    int fd = openat(pfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        ts_err_set(err, "entry '%s': open fifo: %s", entry, strerror(errno));
        return false;
    }
    bool ok = _apply_fd_meta(u, fd, archive_entry_perm(e), archive_entry_uid(e),
                             archive_entry_gid(e), _entry_mtime(e), entry, err);
    close(fd);
    return ok;
}

static bool _entry(unpacker *u, struct archive *a, struct archive_entry *e, ts_err *err)
{
    const char *entry = archive_entry_pathname(e);
    if (!entry) entry = archive_entry_pathname_utf8(e);
    if (!entry) {
        ts_err_set(err, "an entry has no readable name");
        return false;
    }
    char *path = NULL;
    if (!_clean_path(entry, &path, entry, err)) return false;
    bool ok = false;
    const char *hl = archive_entry_hardlink(e);
    mode_t type = archive_entry_filetype(e);
    const char *name = path;
    int pfd = -1;

    if (hl) {
        ok = *path ? _hardlink(u, hl, path, entry, err) : false;
        if (!*path) ts_err_set(err, "entry '%s' would replace the layer root", entry);
        goto out;
    }
    if (*path) {
        pfd = _parent_fd(u, path, &name, entry, err);
        if (pfd < 0) goto out;
    } else if (type != AE_IFDIR) {
        ts_err_set(err, "entry '%s' would replace the layer root", entry);
        goto out;
    }
    if (*path && strncmp(name, WH_PREFIX, strlen(WH_PREFIX)) == 0) {
        ok = _whiteout(u, pfd, name, path, entry, err);
        goto out;
    }
    switch (type) {
    case AE_IFREG:
        ok = _regular(u, a, e, pfd, name, entry, err);
        break;
    case AE_IFDIR:
        ok = _directory(u, e, pfd, name, path, entry, err);
        break;
    case AE_IFLNK:
        ok = _symlink(u, e, pfd, name, entry, err);
        break;
    case AE_IFIFO:
        ok = _fifo(u, e, pfd, name, entry, err);
        break;
    default:
        TLOG_WARN("layer entry skipped: device node or socket", "entry=%s type=0%o", entry,
                  (unsigned)type);
        u->stats->skipped++;
        ok = true;
        break;
    }
out:
    free(path);
    return ok;
}

/* Directory metadata last: creating entries changes a directory's mtime. */
static bool _finish_dirs(unpacker *u, ts_err *err)
{
    if (!u->root_meta_seen && (fchmod(u->root_fd, 0755) != 0 || !_own_as_root(u, u->root_fd))) {
        ts_err_set(err, "layer root: chmod or chown: %s", strerror(errno));
        return false;
    }
    for (size_t i = 0; i < u->n_dirs; i++) {
        dir_meta *m = &u->dirs[i];
        ts_err derr = {{0}};
        int fd = _open_dir(u, m->path, false, m->path, &derr);
        if (fd < 0) continue; /* replaced later in the layer */
        bool ok =
            _apply_fd_meta(u, fd, m->mode, m->uid, m->gid, m->mtime, *m->path ? m->path : ".", err);
        close(fd);
        if (!ok) return false;
    }
    return true;
}

bool unpack_into(int root_fd, const char *blob_path, const unpack_ids *ids, unpack_stats *stats,
                 ts_err *err)
{
    unpack_stats local;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof(*stats));
    unpacker u = {.root_fd = root_fd, .as_root = geteuid() == 0, .cache_fd = -1, .stats = stats};
    if (ids && ids->count) {
        if (!u.as_root) {
            ts_err_set(err, "shifting owners for a user namespace needs root");
            return false;
        }
        u.ids = *ids;
    }
    feed f = {0};
    bool ok = false;
    struct archive *in = NULL;

    f.outer = archive_read_new();
    archive_read_support_filter_all(f.outer);
    archive_read_support_format_raw(f.outer);
    f.buf = ts_malloc(FEED_BUF);
    digest_init(&f.d);
    struct archive_entry *e;
    if (archive_read_open_filename(f.outer, blob_path, FEED_BUF) != ARCHIVE_OK ||
        archive_read_next_header(f.outer, &e) != ARCHIVE_OK) {
        ts_err_set(err, "cannot read the layer: %s", archive_error_string(f.outer));
        goto done;
    }
    in = archive_read_new();
    archive_read_support_format_tar(in);
    if (archive_read_open(in, &f, NULL, _feed_read, NULL) != ARCHIVE_OK) {
        ts_err_set(err, "not a tar archive: %s", archive_error_string(in));
        goto done;
    }
    for (;;) {
        int r = archive_read_next_header(in, &e);
        if (r == ARCHIVE_EOF) break;
        if (r < ARCHIVE_WARN) {
            ts_err_set(err, "bad tar stream after %lld entries: %s", (long long)stats->entries,
                       archive_error_string(in));
            goto done;
        }
        if (!_entry(&u, in, e, err)) goto done;
        stats->entries++;
    }
    /* The diff_id covers the whole uncompressed stream, padding included. */
    for (;;) {
        la_ssize_t n = archive_read_data(f.outer, f.buf, FEED_BUF);
        if (n < 0) {
            ts_err_set(err, "cannot read the layer: %s", archive_error_string(f.outer));
            goto done;
        }
        if (n == 0) break;
        digest_update(&f.d, f.buf, (size_t)n);
    }
    _cache_drop(&u);
    if (!_finish_dirs(&u, err)) goto done;
    stats->uncompressed_bytes = f.d.bytes;
    digest_final(&f.d, stats->diff_id);
    if (stats->ids_clamped)
        TLOG_WARN("layer owners past the user namespace's ids: owned by its nobody",
                  "owners=%lld count=%u", (long long)stats->ids_clamped, u.ids.count);
    ok = true;
done:
    _cache_drop(&u);
    for (size_t i = 0; i < u.n_dirs; i++)
        free(u.dirs[i].path);
    free(u.dirs);
    if (in) archive_read_free(in);
    archive_read_free(f.outer);
    free(f.buf);
    return ok;
}

static int _rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP || flag == FTW_D)
        (void)rmdir(path);
    else
        (void)unlink(path);
    return 0;
}

bool unpack_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT;
    if (!S_ISDIR(st.st_mode)) return unlink(path) == 0;
    (void)nftw(path, _rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    return lstat(path, &st) != 0 && errno == ENOENT;
}

bool unpack_layer(const char *blob_path, const char *dest_dir, const char *tmp_parent,
                  const char *expected_diff_id, const unpack_ids *ids, unpack_stats *stats,
                  ts_err *err)
{
    unpack_stats local;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof(*stats));
    struct stat st;
    if (stat(dest_dir, &st) == 0 && S_ISDIR(st.st_mode)) return true;
    char *tmp = ts_asprintf("%s/layer-XXXXXX", tmp_parent);
    if (!mkdtemp(tmp)) {
        ts_err_set(err, "cannot create a temporary directory in %s: %s", tmp_parent,
                   strerror(errno));
        free(tmp);
        return false;
    }
    bool ok = false;
    int fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        ts_err_set(err, "%s: %s", tmp, strerror(errno));
        goto done;
    }
    ok = unpack_into(fd, blob_path, ids, stats, err);
    close(fd);
    if (!ok) goto done;
    if (expected_diff_id && strcmp(expected_diff_id, stats->diff_id) != 0) {
        ts_err_set(err, "uncompressed digest %s does not match the image config's diff_id %s",
                   stats->diff_id, expected_diff_id);
        ok = false;
        goto done;
    }
    if (rename(tmp, dest_dir) != 0) {
        if ((errno == EEXIST || errno == ENOTEMPTY) && stat(dest_dir, &st) == 0 &&
            S_ISDIR(st.st_mode)) {
            ok = true; /* another pull won the race: same content by digest */
        } else {
            ts_err_set(err, "rename to %s: %s", dest_dir, strerror(errno));
            ok = false;
        }
    } else {
        free(tmp);
        return true;
    }
done:
    if (!unpack_remove_tree(tmp))
        TLOG_WARN("cannot remove a temporary layer directory", "path=%s", tmp);
    free(tmp);
    return ok;
}
