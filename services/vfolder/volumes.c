/* volumes.c: volumes by name and path, folder directories, trash, purge,
 * clone, capacity; the XFS project of a folder with a quota where the file
 * system has them (xfs_quota.c; see volumes.h). */
#include "volumes.h"

#include "libcommon/log.h"
#include "xfs_quota.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <ftw.h>
#include <linux/magic.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define VF_MAX_VOLUMES 32
#ifndef XFS_SUPER_MAGIC
#define XFS_SUPER_MAGIC 0x58465342
#endif

static vf_volume g_volumes[VF_MAX_VOLUMES];
static size_t g_n;

char *vf_file_owner;

const cfg_option vf_volume_options[] = {
    {.name = "vfolder.file_owner",
     .type = CFG_STRING,
     .dst = &vf_file_owner,
     .def = VF_FILE_OWNER_DEFAULT,
     .help =
         "uid:gid on the volumes of what tessera-vfolder creates in folders (folder directories, "
         "mkdir, uploads, clones): the sessions' root, so it must match the agents' user namespace "
         "(agent.userns_base; 1000:1000 for agents with agent.userns = off); \"\": as created"},
    {0},
};

/* ---- ownership ------------------------------------------------------------------ */

bool vf_file_owner_parse(const char *spec, uid_t *uid, gid_t *gid, bool *set)
{
    *set = false;
    if (!spec) spec = VF_FILE_OWNER_DEFAULT;
    if (!*spec) return true;
    unsigned long u, g;
    char tail;
    if (sscanf(spec, "%lu:%lu%c", &u, &g, &tail) != 2 || u > 4294967294UL || g > 4294967294UL ||
        spec[0] == '-' || !strchr(spec, ':') || strchr(spec, ':')[1] == '-')
        return false;
    *uid = (uid_t)u;
    *gid = (gid_t)g;
    *set = true;
    return true;
}

static void _own(int fd, const char *name)
{
    uid_t uid;
    gid_t gid;
    bool set;
    if (!vf_file_owner_parse(vf_file_owner, &uid, &gid, &set) || !set) return;
    int rc = name ? fchownat(fd, name, uid, gid, AT_SYMLINK_NOFOLLOW) : fchown(fd, uid, gid);
    if (rc == 0) return;
    int e = errno;
    static atomic_bool warned;
    if (!atomic_exchange(&warned, true))
        TLOG_WARN("cannot give new files to vfolder.file_owner (further failures not logged)",
                  "owner=%s error=\"%s\"", vf_file_owner ? vf_file_owner : VF_FILE_OWNER_DEFAULT,
                  strerror(e));
}

void vf_own_fd(int fd)
{
    _own(fd, NULL);
}

void vf_own_at(int dirfd, const char *name)
{
    _own(dirfd, name);
}

size_t vf_volume_count(void)
{
    return g_n;
}

const vf_volume *vf_volume_at(size_t i)
{
    return i < g_n ? &g_volumes[i] : NULL;
}

const vf_volume *vf_volume_find(const char *name)
{
    for (size_t i = 0; name && i < g_n; i++)
        if (strcmp(g_volumes[i].name, name) == 0) return &g_volumes[i];
    return NULL;
}

/* mkdir -p. */
static bool _mkdirs(const char *path, mode_t mode, ts_err *err)
{
    char buf[VF_PATH_MAX];
    if (ts_strlcpy(buf, path, sizeof(buf)) >= sizeof(buf)) {
        ts_err_set(err, "path too long: %s", path);
        return false;
    }
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, mode) != 0 && errno != EEXIST) {
                ts_err_set(err, "mkdir %s: %s", buf, strerror(errno));
                return false;
            }
            *p = c;
            if (!c) break;
        }
    }
    return true;
}

static void _probe_fs(vf_volume *v)
{
    static const struct {
        unsigned long magic;
        const char *name;
    } known[] = {
        {XFS_SUPER_MAGIC, "xfs"}, {EXT4_SUPER_MAGIC, "ext4"}, {OVERLAYFS_SUPER_MAGIC, "overlay"},
        {NFS_SUPER_MAGIC, "nfs"}, {TMPFS_MAGIC, "tmpfs"},     {BTRFS_SUPER_MAGIC, "btrfs"},
    };
    struct statfs sf;
    ts_strlcpy(v->fs_type, "other", sizeof(v->fs_type));
    if (statfs(v->path, &sf) != 0) return;
    for (size_t i = 0; i < TS_ARRAY_LEN(known); i++)
        if ((unsigned long)sf.f_type == known[i].magic)
            ts_strlcpy(v->fs_type, known[i].name, sizeof(v->fs_type));
    v->xfs_quota = strcmp(v->fs_type, "xfs") == 0 && vf_xfs_quota_enforced(v->path);
}

bool vf_volumes_init(const char *spec, const char *default_host, ts_err *err)
{
    g_n = 0;
    uid_t ouid;
    gid_t ogid;
    bool oset;
    if (!vf_file_owner_parse(vf_file_owner, &ouid, &ogid, &oset)) {
        ts_err_set(err, "vfolder.file_owner \"%s\": uid:gid (numbers), or \"\"", vf_file_owner);
        return false;
    }
    if (!spec || !*spec) {
        ts_err_set(err, "vfolder.volumes is empty: name at least one volume (\"local:/path\")");
        return false;
    }
    char *copy = ts_strdup(spec), *save = NULL;
    bool ok = true;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        char *colon = strchr(tok, ':');
        if (!colon || colon == tok || colon[1] != '/') {
            ts_err_set(err, "vfolder.volumes: \"%s\" is not name:/absolute/path", tok);
            ok = false;
            break;
        }
        *colon = '\0';
        size_t nlen = strlen(tok);
        bool name_ok = nlen < VF_HOST_MAX;
        for (const char *c = tok; *c; c++)
            if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                  (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.'))
                name_ok = false;
        if (!name_ok) {
            ts_err_set(err, "vfolder.volumes: bad volume name \"%s\" (A-Z a-z 0-9 - _ ., <= 64)",
                       tok);
            ok = false;
            break;
        }
        if (vf_volume_find(tok)) {
            ts_err_set(err, "vfolder.volumes: volume \"%s\" named twice", tok);
            ok = false;
            break;
        }
        if (g_n == VF_MAX_VOLUMES) {
            ts_err_set(err, "vfolder.volumes: more than %d volumes", VF_MAX_VOLUMES);
            ok = false;
            break;
        }
        vf_volume *v = &g_volumes[g_n];
        memset(v, 0, sizeof(*v));
        ts_strlcpy(v->name, tok, sizeof(v->name));
        size_t plen = strlen(colon + 1);
        while (plen > 1 && colon[plen] == '/') /* strip trailing slashes */
            colon[plen--] = '\0';
        if (ts_strlcpy(v->path, colon + 1, sizeof(v->path)) >= sizeof(v->path) - 128) {
            ts_err_set(err, "vfolder.volumes: path of %s is too long", tok);
            ok = false;
            break;
        }
        char trash[VF_PATH_MAX];
        snprintf(trash, sizeof(trash), "%s/.trash", v->path);
        if (!_mkdirs(v->path, 0755, err) || !_mkdirs(trash, 0700, err)) {
            ts_err_prefix(err, "volume %s", v->name);
            ok = false;
            break;
        }
        _probe_fs(v);
        char qpath[2 * VF_PATH_MAX];
        TLOG_INFO("volume", "host=%s path=%s fs=%s xfs_quota=%s", v->name,
                  tlog_quote(qpath, sizeof(qpath), v->path), v->fs_type,
                  v->xfs_quota ? "yes" : "no");
        g_n++;
    }
    free(copy);
    if (ok && default_host && *default_host && !vf_volume_find(default_host)) {
        ts_err_set(err, "vfolder.default_host \"%s\" is not one of vfolder.volumes", default_host);
        ok = false;
    }
    return ok;
}

void vf_volume_folder_path(const vf_volume *v, const char *id, char *out)
{
    snprintf(out, VF_PATH_MAX, "%s/%.2s/%.2s/%s", v->path, id, id + 2, id);
}

void vf_volume_trash_path(const vf_volume *v, const char *id, char *out)
{
    snprintf(out, VF_PATH_MAX, "%s/.trash/%s", v->path, id);
}

bool vf_volume_create_dir(const vf_volume *v, const char *id, int64_t quota_bytes, ts_err *err)
{
    char dir[VF_PATH_MAX];
    vf_volume_folder_path(v, id, dir);
    char *slash = strrchr(dir, '/');
    *slash = '\0';
    if (!_mkdirs(dir, 0755, err)) return false;
    *slash = '/';
    if (mkdir(dir, 0755) != 0) {
        ts_err_set(err, "mkdir %s: %s", dir, strerror(errno));
        return false;
    }
    /* The sessions' root owns it (vfolder.file_owner): root in a session
     * writes there, nobody else on the host does. */
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        ts_err_set(err, "open %s: %s", dir, strerror(errno));
        (void)rmdir(dir);
        return false;
    }
    vf_own_fd(fd);
    if (fchmod(fd, 0755) != 0)
        TLOG_WARN("chmod failed", "path=%s error=\"%s\"", dir, strerror(errno));
    if (!v->xfs_quota || quota_bytes <= 0) {
        close(fd);
        return true;
    }
    /* The fence: an XFS project with the folder's quota as its hard limit. */
    uint32_t projid = 0;
    bool ok = vf_xfs_project_create(fd, id, quota_bytes, &projid, err);
    close(fd);
    if (!ok) {
        ts_err_prefix(err, "XFS project quota of %s", dir);
        (void)rmdir(dir);
        return false;
    }
    TLOG_INFO("xfs project quota set", "host=%s project=%u bytes=%" PRId64, v->name, projid,
              quota_bytes);
    return true;
}

bool vf_volume_trash(const vf_volume *v, const char *id, ts_err *err)
{
    char from[VF_PATH_MAX], to[VF_PATH_MAX];
    vf_volume_folder_path(v, id, from);
    vf_volume_trash_path(v, id, to);
    if (rename(from, to) != 0 && errno != ENOENT) {
        ts_err_set(err, "move %s to the trash: %s", from, strerror(errno));
        return false;
    }
    return true;
}

bool vf_volume_restore(const vf_volume *v, const char *id, ts_err *err)
{
    char from[VF_PATH_MAX], to[VF_PATH_MAX];
    vf_volume_trash_path(v, id, from);
    vf_volume_folder_path(v, id, to);
    char *slash = strrchr(to, '/');
    *slash = '\0';
    if (!_mkdirs(to, 0755, err)) return false;
    *slash = '/';
    if (rename(from, to) != 0) {
        ts_err_set(err, "restore %s from the trash: %s", to, strerror(errno));
        return false;
    }
    return true;
}

static int _rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)ftw;
    int rc = (flag == FTW_DP || flag == FTW_D) ? rmdir(path) : unlink(path);
    if (rc != 0 && errno != ENOENT) {
        /* A directory without write permission (chmod'ed by a session): open it up and retry. */
        if (errno == EACCES || errno == EPERM) {
            char parent[VF_PATH_MAX];
            ts_strlcpy(parent, path, sizeof(parent));
            char *slash = strrchr(parent, '/');
            if (slash) {
                *slash = '\0';
                if (chmod(parent, 0700) == 0)
                    rc = (flag == FTW_DP || flag == FTW_D) ? rmdir(path) : unlink(path);
            }
        }
        if (rc != 0 && errno != ENOENT) return errno;
    }
    return 0;
}

static bool _rm_tree(const char *path, ts_err *err)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? true : (ts_err_set(err, "%s: %s", path, strerror(errno)), false);
    /* Directories get write permission first so that nftw can descend. */
    int rc = nftw(path, _rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    if (rc != 0) {
        ts_err_set(err, "remove %s: %s", path, rc > 0 ? strerror(rc) : strerror(errno));
        return false;
    }
    return true;
}

/* Remove the tree at path; then the limits of its XFS project, if it was one. */
static bool _rm_folder_tree(const vf_volume *v, const char *path, ts_err *err)
{
    uint32_t projid = 0;
    if (v->xfs_quota) {
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
            projid = vf_xfs_project_of(fd);
            close(fd);
        }
    }
    if (!_rm_tree(path, err)) return false;
    if (projid == 0) return true;
    int fd = open(v->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    bool ok = fd >= 0 && vf_xfs_project_drop(fd, projid, err);
    if (fd < 0) ts_err_set(err, "open %s: %s", v->path, strerror(errno));
    if (fd >= 0) close(fd);
    if (!ok) ts_err_prefix(err, "drop XFS project %u", projid);
    return ok;
}

bool vf_volume_purge(const vf_volume *v, const char *id, ts_err *err)
{
    char p[VF_PATH_MAX];
    vf_volume_trash_path(v, id, p);
    if (!_rm_folder_tree(v, p, err)) return false;
    vf_volume_folder_path(v, id, p);
    return _rm_folder_tree(v, p, err);
}

/* Copy the directory open as sfd into dfd (both O_DIRECTORY), recursively,
 * never following symlinks. */
static bool _copy_dir(int sfd, int dfd, int64_t *bytes, int depth, ts_err *err)
{
    if (depth > 256) {
        ts_err_set(err, "directory tree too deep");
        return false;
    }
    int dup_fd = dup(sfd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d) {
        if (dup_fd >= 0) close(dup_fd);
        ts_err_set(err, "opendir: %s", strerror(errno));
        return false;
    }
    bool ok = true;
    struct dirent *e;
    while (ok && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        struct stat st;
        if (fstatat(sfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            if (mkdirat(dfd, e->d_name, st.st_mode & 07777) != 0 && errno != EEXIST) {
                ts_err_set(err, "mkdir %s: %s", e->d_name, strerror(errno));
                ok = false;
                break;
            }
            int s2 = openat(sfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            int d2 = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (s2 < 0 || d2 < 0) {
                ts_err_set(err, "open %s: %s", e->d_name, strerror(errno));
                ok = false;
            } else {
                vf_own_fd(d2);
                ok = _copy_dir(s2, d2, bytes, depth + 1, err);
            }
            if (s2 >= 0) close(s2);
            if (d2 >= 0) close(d2);
        } else if (S_ISLNK(st.st_mode)) {
            char target[VF_PATH_MAX];
            ssize_t n = readlinkat(sfd, e->d_name, target, sizeof(target) - 1);
            if (n >= 0) {
                target[n] = '\0';
                if (symlinkat(target, dfd, e->d_name) != 0 && errno != EEXIST) {
                    ts_err_set(err, "symlink %s: %s", e->d_name, strerror(errno));
                    ok = false;
                } else {
                    vf_own_at(dfd, e->d_name);
                }
            }
        } else if (S_ISREG(st.st_mode)) {
            int in = openat(sfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            int out =
                openat(dfd, e->d_name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 07777);
            if (in < 0 || out < 0) {
                ts_err_set(err, "copy %s: %s", e->d_name, strerror(errno));
                ok = false;
            } else {
                /* the owner's, with the source's permissions and no set-id bits */
                vf_own_fd(out);
                (void)fchmod(out, st.st_mode & 0777);
                off_t left = st.st_size;
                while (left > 0) {
                    ssize_t n = copy_file_range(in, NULL, out, NULL, (size_t)left, 0);
                    if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL)) {
                        char buf[1 << 16];
                        n = read(in, buf, sizeof(buf));
                        if (n > 0 && write(out, buf, (size_t)n) != n) n = -1;
                    }
                    if (n <= 0) break;
                    left -= n;
                }
                if (left > 0) {
                    ts_err_set(err, "copy %s: %s", e->d_name, strerror(errno));
                    ok = false;
                }
                *bytes += st.st_size;
            }
            if (in >= 0) close(in);
            if (out >= 0) close(out);
        } /* devices, fifos, sockets: skipped */
    }
    closedir(d);
    return ok;
}

bool vf_volume_clone(const vf_volume *src_v, const char *src_id, const vf_volume *dst_v,
                     const char *dst_id, int64_t *bytes, ts_err *err)
{
    *bytes = 0;
    char src[VF_PATH_MAX], dst[VF_PATH_MAX];
    vf_volume_folder_path(src_v, src_id, src);
    vf_volume_folder_path(dst_v, dst_id, dst);
    int sfd = open(src, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sfd < 0) {
        if (errno == ENOENT) return true; /* nothing written yet */
        ts_err_set(err, "open %s: %s", src, strerror(errno));
        return false;
    }
    int dfd = open(dst, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        ts_err_set(err, "open %s: %s", dst, strerror(errno));
        close(sfd);
        return false;
    }
    bool ok = _copy_dir(sfd, dfd, bytes, 0, err);
    close(sfd);
    close(dfd);
    return ok;
}

static __thread int64_t t_du;
static int _du_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)path, (void)ftw;
    if (flag == FTW_F && S_ISREG(st->st_mode)) t_du += st->st_size;
    return 0;
}

bool vf_volume_du(const char *path, int64_t *bytes, ts_err *err)
{
    t_du = 0;
    int rc = nftw(path, _du_one, 32, FTW_PHYS | FTW_MOUNT);
    if (rc != 0 && errno != ENOENT) {
        ts_err_set(err, "du %s: %s", path, strerror(errno));
        return false;
    }
    *bytes = t_du;
    return true;
}

bool vf_volume_capacity(const vf_volume *v, int64_t *total, int64_t *avail, ts_err *err)
{
    struct statvfs sv;
    if (statvfs(v->path, &sv) != 0) {
        ts_err_set(err, "statvfs %s: %s", v->path, strerror(errno));
        return false;
    }
    *total = (int64_t)sv.f_blocks * (int64_t)sv.f_frsize;
    *avail = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
    return true;
}
