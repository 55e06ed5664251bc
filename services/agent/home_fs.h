/* home_fs.h: files of a kernel's home directory (the host directory mounted
 * at /home/work), reached only beneath it. The user controls everything in
 * it, symlinks included, so every open starts from an O_PATH descriptor of
 * the home dir and goes through openat2 with RESOLVE_BENEATH and
 * RESOLVE_NO_MAGICLINKS: a symlink (or "..") that leads out fails with EXDEV
 * instead of being followed. Writes refuse a symlink as the last component
 * and anything but a regular file; what they create belongs to the home
 * dir's owner (the container's user, runtime_start.c) with mode 0644 / 0755.
 *
 *     home_fs h;
 *     if (!home_fs_open(&h, "/var/lib/tessera/kernels/<id>/home", &err)) ...
 *     char rel[HOME_FS_PATH_MAX];
 *     if (!home_fs_path(user_path, rel, sizeof(rel), &err)) ... 400 ...
 *     int fd = home_fs_write_open(&h, rel, &e);  // or home_fs_open_at
 *     home_fs_close(&h);
 *
 * Errors are errno values (home_fs_status maps them to an HTTP status).
 */
#ifndef AGENT_HOME_FS_H
#define AGENT_HOME_FS_H

#include "libcommon/buf.h"
#include "libcommon/common.h"

#include <sys/types.h>

#define HOME_FS_PATH_MAX 1024
#define HOME_FS_MOUNT "/home/work"

typedef struct home_fs {
    int fd; /* O_PATH|O_DIRECTORY of the home dir */
    uid_t uid;
    gid_t gid; /* its owner: what files created here get */
} home_fs;

bool home_fs_open(home_fs *h, const char *dir, ts_err *err) TS_MUST_CHECK;
void home_fs_close(home_fs *h);

/* A user's path made relative to the home dir into out: "a/b", "./a/b/",
 * "/home/work/a/b" -> "a/b"; "" , ".", "/home/work" -> "." (the home dir).
 * False (err says why) for other absolute paths, a ".." segment, a NUL or
 * control byte, or more than out_size - 1 bytes. */
bool home_fs_path(const char *in, char *out, size_t out_size, ts_err *err) TS_MUST_CHECK;

/* openat2(h->fd, rel, flags, mode) beneath the home dir; -1 with errno set. */
int home_fs_open_at(const home_fs *h, const char *rel, int flags, mode_t mode);

/* The regular file rel opened for writing (created 0644 or truncated, owned
 * by the home dir's owner), its missing parent directories made (0755, the
 * same owner). -1 with errno: ELOOP / EXDEV for a symlink on the way or as
 * the file, EISDIR / EINVAL for a directory or another kind of file. */
int home_fs_write_open(const home_fs *h, const char *rel);

/* The HTTP status and problem type for errno e of an open beneath the home. */
int home_fs_status(int e, const char **type);

/* Append rel (a file, a symlink or a directory, recursively) to tar as ustar
 * entries named by their paths under the home dir; at most max bytes in all.
 * False with errno: E2BIG past max, ENAMETOOLONG for a name ustar cannot
 * hold, or that of the failed open. */
bool home_fs_tar(const home_fs *h, const char *rel, ts_buf *tar, size_t max) TS_MUST_CHECK;
/* The two zero blocks that end an archive. */
void home_fs_tar_end(ts_buf *tar);

/* A file a new kernel gets in its home (CreateKernel.home_files: the owner's
 * dotfiles and SSH public key). */
typedef struct home_file {
    const char *path; /* relative to the home dir (home_fs_path) */
    unsigned mode;    /* permission bits; setuid, setgid and sticky are dropped */
    const void *data;
    size_t len;
} home_file;

/* Write each file into the home dir dir where nothing of its path exists yet
 * (a kept home keeps its own), beneath it as home_fs_write_open does, owned
 * by the home's owner; a file that cannot be written is logged and skipped.
 * The number written. */
int home_fs_seed(const char *dir, const home_file *files, int n);

#endif
