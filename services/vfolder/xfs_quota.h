/* xfs_quota.h: XFS project quotas on folder directories (issue 7). On a
 * volume that is XFS mounted with project quota enforcement (prjquota), a
 * folder created with a quota of its own is an XFS project: its directory
 * carries the project id and the inherit flag, so everything created below
 * it (by the API or by a session through its bind mount) is charged to the
 * project, and the kernel refuses blocks past the hard limit (ENOSPC or
 * EDQUOT). Project ids are unique per file system: derived from the folder
 * id, moved on when that one is taken. Our accounting (quota.c) is what
 * refuses API writes everywhere; this is the fence for writes that do not
 * go through the API. */
#ifndef VFOLDER_XFS_QUOTA_H
#define VFOLDER_XFS_QUOTA_H

#include "libcommon/common.h"

#include <stdbool.h>
#include <stdint.h>

/* Whether the file system of path is XFS with project quotas enforced. */
bool vf_xfs_quota_enforced(const char *path) TS_MUST_CHECK;
/* Make the directory open as dirfd a new project with a hard block limit of
 * bytes (rounded up to 512-byte units); *projid: the id given. */
bool vf_xfs_project_create(int dirfd, const char *folder_id, int64_t bytes, uint32_t *projid,
                           ts_err *err) TS_MUST_CHECK;
/* The project id of an open file or directory (0: none, or no such
 * attribute on this file system). */
uint32_t vf_xfs_project_of(int fd);
/* Put an open file into project projid (so that it may be renamed into a
 * directory of that project: XFS refuses a rename across projects). */
bool vf_xfs_project_adopt(int fd, uint32_t projid, ts_err *err) TS_MUST_CHECK;
/* Remove the limits of project projid on the file system of fd (the folder
 * is gone): the id is free again. */
bool vf_xfs_project_drop(int fd, uint32_t projid, ts_err *err) TS_MUST_CHECK;

#endif
