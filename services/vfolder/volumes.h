/* volumes.h: the volumes (storage hosts) tessera-vfolder keeps folders on,
 * from vfolder.volumes ("name:path[,name:path]"): any POSIX file system. A
 * folder lives in <volume>/<id[0:2]>/<id[2:4]>/<id>; a trashed one in
 * <volume>/.trash/<id> until it is purged. Where the volume is XFS with
 * project quotas enforced, a folder with a quota of its own is also an XFS
 * project (xfs_quota.h): the fence for writes that bypass the API; our own
 * accounting in quota.c is what refuses API writes everywhere.
 *
 * Ownership: sessions mount folders with their root mapped to an
 * unprivileged host user (the agents' user namespace, docs/agent.md), so
 * what tessera-vfolder itself creates in a folder (its directory, mkdir,
 * uploads, a clone's entries) is given to vfolder.file_owner, the host ids
 * of the sessions' root; files sessions write are theirs already. */
#ifndef VFOLDER_VOLUMES_H
#define VFOLDER_VOLUMES_H

#include "context.h"
#include "libcommon/config.h"

#include <sys/types.h>

typedef struct vf_volume {
    char name[VF_HOST_MAX];
    char path[VF_PATH_MAX];
    char fs_type[16]; /* "xfs", "ext4", "overlay", "nfs", ... ("other") */
    bool xfs_quota;   /* XFS with project quotas usable */
} vf_volume;

/* vfolder.file_owner ("uid:gid"; "": leave what tessera-vfolder creates
 * as it creates it) and its option table, for main.c to merge. NULL: the
 * default, VF_FILE_OWNER_DEFAULT. */
#define VF_FILE_OWNER_DEFAULT "100000:100000"
extern char *vf_file_owner;
extern const cfg_option vf_volume_options[];

/* vfolder.file_owner parsed: *set false for "". False when malformed. */
bool vf_file_owner_parse(const char *spec, uid_t *uid, gid_t *gid, bool *set) TS_MUST_CHECK;

/* Give what fd is (or dirfd/name, never following a symlink) to
 * vfolder.file_owner. Best effort: a failure is logged (once: a
 * tessera-vfolder that may not chown still serves). */
void vf_own_fd(int fd);
void vf_own_at(int dirfd, const char *name);

/* Parse vfolder.volumes and check each path (created when missing), and
 * vfolder.file_owner. */
bool vf_volumes_init(const char *spec, const char *default_host, ts_err *err) TS_MUST_CHECK;
size_t vf_volume_count(void);
const vf_volume *vf_volume_at(size_t i);
const vf_volume *vf_volume_find(const char *name);

/* The folder directory of id on volume v (out: VF_PATH_MAX). */
void vf_volume_folder_path(const vf_volume *v, const char *id, char *out);
void vf_volume_trash_path(const vf_volume *v, const char *id, char *out);

/* Create the folder's directory (0755, vfolder.file_owner's) with its
 * parents (0755, tessera-vfolder's); when the volume
 * has XFS project quotas and quota_bytes > 0, make it a project with that
 * hard limit (a failure removes the directory and fails the create). */
bool vf_volume_create_dir(const vf_volume *v, const char *id, int64_t quota_bytes,
                          ts_err *err) TS_MUST_CHECK;
/* Move the folder's directory to the trash (rename; a missing directory is fine). */
bool vf_volume_trash(const vf_volume *v, const char *id, ts_err *err) TS_MUST_CHECK;
/* Move it back from the trash. */
bool vf_volume_restore(const vf_volume *v, const char *id, ts_err *err) TS_MUST_CHECK;
/* Remove the trashed tree (and a live one left over); never follows
 * symlinks. The folder's XFS project, if any, loses its limits. */
bool vf_volume_purge(const vf_volume *v, const char *id, ts_err *err) TS_MUST_CHECK;
/* Copy the tree of src_id into dst_id's new directory (files, directories,
 * symlinks as links; nothing outside the tree is followed), every entry
 * vfolder.file_owner's. *bytes: the size of the regular files copied. */
bool vf_volume_clone(const vf_volume *src_v, const char *src_id, const vf_volume *dst_v,
                     const char *dst_id, int64_t *bytes, ts_err *err) TS_MUST_CHECK;
/* Bytes of regular files under the folder (for accounting at clone time). */
bool vf_volume_du(const char *path, int64_t *bytes, ts_err *err) TS_MUST_CHECK;

/* Capacity from statvfs: total and free bytes. */
bool vf_volume_capacity(const vf_volume *v, int64_t *total, int64_t *avail,
                        ts_err *err) TS_MUST_CHECK;

#endif
