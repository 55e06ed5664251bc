/* xfs_quota.c: XFS project quotas on folder directories (see xfs_quota.h):
 * FS_IOC_FS{GET,SET}XATTR for a file's project id and inherit flag,
 * quotactl_fd(2) for the project's limits and the file system's state. */
#include "xfs_quota.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/dqblk_xfs.h>
#include <linux/fs.h>
#include <linux/quota.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* How many ids past the derived one a create tries before it gives up. */
#define PROJECT_PROBES 64

#ifdef SYS_quotactl_fd
static int _quotactl(int fd, int cmd, uint32_t id, void *addr)
{
    return (int)syscall(SYS_quotactl_fd, fd, QCMD(cmd, PRJQUOTA), id, addr);
}
#else
static int _quotactl(int fd, int cmd, uint32_t id, void *addr)
{
    (void)fd, (void)cmd, (void)id, (void)addr;
    errno = ENOSYS;
    return -1;
}
#endif

bool vf_xfs_quota_enforced(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return false;
    struct fs_quota_stat qs;
    memset(&qs, 0, sizeof(qs));
    bool on = _quotactl(fd, Q_XGETQSTAT, 0, &qs) == 0 && (qs.qs_flags & FS_QUOTA_PDQ_ENFD);
    close(fd);
    return on;
}

uint32_t vf_xfs_project_of(int fd)
{
    struct fsxattr fa;
    return ioctl(fd, FS_IOC_FSGETXATTR, &fa) == 0 ? fa.fsx_projid : 0;
}

static bool _set_project(int fd, uint32_t projid, bool inherit, ts_err *err)
{
    struct fsxattr fa;
    if (ioctl(fd, FS_IOC_FSGETXATTR, &fa) != 0) {
        ts_err_set(err, "read the project id: %s", strerror(errno));
        return false;
    }
    fa.fsx_projid = projid;
    if (inherit) fa.fsx_xflags |= FS_XFLAG_PROJINHERIT;
    if (ioctl(fd, FS_IOC_FSSETXATTR, &fa) != 0) {
        ts_err_set(err, "set project id %u: %s", projid, strerror(errno));
        return false;
    }
    return true;
}

/* Whether project projid is free on the file system of fd: no dquot, or one
 * without limits or usage (a purged folder's). */
static bool _project_free(int fd, uint32_t projid)
{
    struct fs_disk_quota dq;
    memset(&dq, 0, sizeof(dq));
    if (_quotactl(fd, Q_XGETQUOTA, projid, &dq) != 0) return errno == ENOENT;
    return !dq.d_blk_hardlimit && !dq.d_blk_softlimit && !dq.d_ino_hardlimit &&
           !dq.d_ino_softlimit && !dq.d_bcount && !dq.d_icount;
}

static bool _set_limit(int fd, uint32_t projid, uint64_t blocks, ts_err *err)
{
    struct fs_disk_quota dq;
    memset(&dq, 0, sizeof(dq));
    dq.d_version = FS_DQUOT_VERSION;
    dq.d_id = projid;
    dq.d_flags = FS_PROJ_QUOTA;
    dq.d_fieldmask = FS_DQ_BHARD | FS_DQ_BSOFT | FS_DQ_IHARD | FS_DQ_ISOFT;
    dq.d_blk_hardlimit = dq.d_blk_softlimit = blocks;
    if (_quotactl(fd, Q_XSETQLIM, projid, &dq) != 0) {
        ts_err_set(err, "set the limit of project %u: %s", projid, strerror(errno));
        return false;
    }
    return true;
}

bool vf_xfs_project_create(int dirfd, const char *folder_id, int64_t bytes, uint32_t *projid,
                           ts_err *err)
{
    /* Odd, so never 0 (no project); the first 8 hex digits of the folder id. */
    char hex[9] = {0};
    memcpy(hex, folder_id, 8);
    uint32_t id = (uint32_t)strtoul(hex, NULL, 16) | 1u;
    int i = 0;
    while (i < PROJECT_PROBES && !_project_free(dirfd, id)) {
        id += 2;
        i++;
    }
    if (i == PROJECT_PROBES) {
        ts_err_set(err, "no free XFS project id near %s", hex);
        return false;
    }
    /* The limit first: the id is taken (for the next create's probe) as soon
     * as the directory is in it. */
    if (!_set_limit(dirfd, id, (uint64_t)(bytes + 511) / 512, err)) return false;
    if (!_set_project(dirfd, id, true, err)) {
        ts_err e2 = {{0}};
        if (!_set_limit(dirfd, id, 0, &e2)) { /* the error that matters is err's */
        }
        return false;
    }
    *projid = id;
    return true;
}

bool vf_xfs_project_adopt(int fd, uint32_t projid, ts_err *err)
{
    if (vf_xfs_project_of(fd) == projid) return true;
    return _set_project(fd, projid, false, err);
}

bool vf_xfs_project_drop(int fd, uint32_t projid, ts_err *err)
{
    return projid == 0 || _set_limit(fd, projid, 0, err);
}
