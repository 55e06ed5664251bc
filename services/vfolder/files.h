/* files.h: file operations confined to a folder's directory.
 *
 * Every path a client sends is resolved relative to a directory fd of the
 * folder root with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) (Linux >=
 * 5.6), so "..", absolute paths and symlinks that lead out of the folder fail
 * with EXDEV in the kernel, at the moment of the lookup: a symlink swapped in
 * by a session between two calls cannot redirect us either. Where openat2 is
 * missing (ENOSYS) the fallback walks one component at a time with
 * O_NOFOLLOW, refusing every symlink and every ".." that would leave the root.
 *
 * Operations on a path's last component (delete, rename, move, the entries of
 * a listing) act on that entry itself, never on what a symlink points to
 * (AT_SYMLINK_NOFOLLOW, unlinkat, renameat2 on the parent's fd). A recursive
 * delete walks with dirfds opened O_NOFOLLOW|O_DIRECTORY: a directory turned
 * into a symlink mid-walk is unlinked as a link, its target left alone.
 *
 * Errors: a function that can fail returns false and sets *errnum to the
 * errno value (positive) that says why; vf_fs_problem turns it into an
 * answer. */
#ifndef VFOLDER_FILES_H
#define VFOLDER_FILES_H

#include "libcommon/common.h"
#include "libcommon/http.h"

#include <jansson.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Force the component-walking fallback (tests); false: openat2 when the
 * kernel has it. */
extern bool vf_fs_force_fallback;

/* The folder root as an O_PATH directory *fd (the path itself is trusted: it
 * comes from our own table). */
bool vf_fs_open_root(const char *host_path, int *fd, int *errnum) TS_MUST_CHECK;

/* Open path (relative to root; "" or "." is the root itself) confined to
 * root, with open(2) flags (O_CREAT allowed: mode applies), into *fd. EXDEV
 * when the path leads outside. The last component is followed when it is a
 * symlink that stays inside (add O_NOFOLLOW to refuse it). */
bool vf_fs_open(int root, const char *path, int flags, mode_t mode, int *fd,
                int *errnum) TS_MUST_CHECK;

/* Split path into its parent (opened O_PATH|O_DIRECTORY, confined, into *fd)
 * and its last component (*leaf, heap). EINVAL for a path without a usable
 * last component ("", ".", "..", "a/..", trailing junk). Trailing slashes are
 * dropped. */
bool vf_fs_open_parent(int root, const char *path, int *fd, char **leaf, int *errnum) TS_MUST_CHECK;

/* A path check without touching the disk: not empty, below 4096 bytes, no NUL
 * (callers pass C strings), no control characters. */
bool vf_fs_path_ok(const char *path) TS_MUST_CHECK;

/* One entry of a directory for vf_fs_each: its name in dirfd and its lstat.
 * False stops the walk. */
typedef bool (*vf_fs_visit)(int dirfd, const char *name, const struct stat *st, void *arg);
/* Visit every entry of the directory open as fd (taken over: closed) but "."
 * and ".." (an entry gone before its lstat is skipped). False when the
 * directory cannot be read. */
bool vf_fs_each(int fd, vf_fs_visit visit, void *arg, int *errnum) TS_MUST_CHECK;

/* The entries of a directory: *items [{name, type FILE|DIRECTORY|SYMLINK,
 * size, mode ("644"), created, modified (ISO-8601 UTC)}], lstat semantics,
 * sorted by name. */
bool vf_fs_list(int root, const char *path, json_t **items, int *errnum) TS_MUST_CHECK;

/* mkdir path; parents: create missing parents; exist_ok: an existing
 * directory is fine. */
bool vf_fs_mkdir(int root, const char *path, bool parents, bool exist_ok,
                 int *errnum) TS_MUST_CHECK;

/* Rename the last component of path to new_name (a plain name, same
 * directory). EEXIST when new_name exists. */
bool vf_fs_rename(int root, const char *path, const char *new_name, int *errnum) TS_MUST_CHECK;

/* Move src to dst; when dst is an existing directory, into it (keeping the
 * name). Never replaces an existing entry (EEXIST). */
bool vf_fs_move(int root, const char *src, const char *dst, int *errnum) TS_MUST_CHECK;

/* Delete path: a file or symlink is unlinked; a directory needs recursive
 * unless empty. *freed: bytes of regular files removed (for the quota), also
 * when it fails part way. */
bool vf_fs_delete(int root, const char *path, bool recursive, int64_t *freed,
                  int *errnum) TS_MUST_CHECK;

/* The problem answer for errno value errnum of an operation on path. */
void vf_fs_problem(http_resp *resp, int errnum, const char *what, const char *path);

#endif
