/* runtime_disk.c: a kernel's disk, of a size, kept across a restart (runtime_disk.h). */
#include "services/agent/runtime_disk.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcommon/log.h"
#include "libcommon/proc.h"
#include "services/agent/loopdev.h"
#include "services/agent/overlay.h"

#define MKFS_TIMEOUT_MS 30000
/* blocks of the disk kept for the agent (its /etc files at a start): about
 * this much, at most 5 % */
#define RESERVED_BYTES (4LL << 20)

/* What a restart keeps, moved out of the kernel dir while it is rebuilt:
 * <kernels>/.kept-<id>/disk (runtime_list skips names starting with '.'). */
static char *_kept_dir(runtime *rt, const char *id)
{
    return ts_asprintf("%s/.kept-%s", rt->kernels_dir, id);
}

static bool _exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

static bool _mkdir(const char *path, mode_t mode, ts_err *err)
{
    if (mkdir(path, mode) == 0 || errno == EEXIST) return true;
    ts_err_set(err, "mkdir %s: %s", path, strerror(errno));
    return false;
}

static bool _rename(const char *from, const char *to, ts_err *err)
{
    if (rename(from, to) == 0) return true;
    ts_err_set(err, "rename %s to %s: %s", from, to, strerror(errno));
    return false;
}

/* The kept disk (and its image) back into kdir; true with *kept false when
 * there is none. */
static bool _take_kept(runtime *rt, const char *id, const char *kdir, bool *kept, ts_err *err)
{
    char *dir = _kept_dir(rt, id);
    char *from = ts_asprintf("%s/" RDISK_DIR, dir), *to = ts_asprintf("%s/" RDISK_DIR, kdir);
    char *img_from = ts_asprintf("%s/" RDISK_IMAGE, dir);
    char *img_to = ts_asprintf("%s/" RDISK_IMAGE, kdir);
    bool ok = true;
    *kept = _exists(from);
    if (*kept) {
        ok = _rename(from, to, err);
        if (ok && _exists(img_from)) ok = _rename(img_from, img_to, err);
    }
    if (ok) rts_rm_tree(dir); /* empty now, or a leftover without a disk */
    free(img_to);
    free(img_from);
    free(to);
    free(from);
    free(dir);
    return ok;
}

void rdisk_setup(runtime *rt)
{
    static const char *const mkfs[] = {"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4",
                                       "/usr/bin/mkfs.ext4"};
    for (size_t i = 0; !rt->mkfs && i < TS_ARRAY_LEN(mkfs); i++)
        if (access(mkfs[i], X_OK) == 0) rt->mkfs = ts_strdup(mkfs[i]);
    if (!rt->mkfs) {
        snprintf(rt->disk_why, sizeof(rt->disk_why),
                 "no mkfs.ext4 (e2fsprogs) in /usr/sbin or /sbin");
        return;
    }
    rt->disk_images = loopdev_available(rt->disk_why, sizeof(rt->disk_why));
}

/* A sparse file of size bytes made an ext4 file system: no journal (what is
 * on it does not outlive the host: kernels do not survive a reboot), lazily
 * initialised inode tables, a few blocks reserved for root (the agent). */
static bool _make_image(runtime *rt, const char *img, int64_t size, ts_err *err)
{
    int fd = open(img, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, size) != 0) {
        ts_err_set(err, "create %s of %lld bytes: %s", img, (long long)size, strerror(errno));
        if (fd >= 0) close(fd);
        (void)unlink(img);
        return false;
    }
    close(fd);
    double pct = (double)RESERVED_BYTES * 100.0 / (double)size;
    char reserved[32];
    snprintf(reserved, sizeof(reserved), "%.3f", pct > 5.0 ? 5.0 : pct);
    const char *argv[] = {rt->mkfs, "-q",           "-F",
                          "-O",     "^has_journal", "-m",
                          reserved, "-E",           "lazy_itable_init=1,nodiscard",
                          "-L",     "tessera-disk", img,
                          NULL};
    proc_opts po = {.argv = argv, .timeout_ms = MKFS_TIMEOUT_MS, .cap_bytes = 8192};
    exec_result r = {0};
    bool ok = proc_run(&po, &r, err);
    if (ok && r.exit_code != 0) {
        ts_err_set(err, "mkfs.ext4 %s: exit %d: %.300s", img, r.exit_code, r.err);
        ok = false;
    }
    exec_result_free(&r);
    if (!ok) (void)unlink(img);
    return ok;
}

/* The image mounted on disk through a loop device (gone with the unmount). */
static bool _mount_image(const char *img, const char *disk, ts_err *err)
{
    char dev[64];
    int fd = -1;
    if (!loopdev_attach(img, dev, sizeof(dev), &fd, err)) return false;
    bool ok = mount(dev, disk, "ext4", MS_NOSUID | MS_NODEV, "") == 0;
    if (!ok) ts_err_set(err, "mount %s (%s) on %s: %s", img, dev, disk, strerror(errno));
    close(fd); /* autoclear: the device goes with the unmount (now, when the mount failed) */
    return ok;
}

bool rdisk_prepare(runtime *rt, const char *id, const char *kdir, int64_t size, bool *kept,
                   ts_err *err)
{
    char *disk = ts_asprintf("%s/" RDISK_DIR, kdir);
    char *img = ts_asprintf("%s/" RDISK_IMAGE, kdir);
    bool ok = _take_kept(rt, id, kdir, kept, err);
    if (ok && !*kept) ok = _mkdir(disk, 0755, err);
    if (ok && !*kept && size > 0) {
        if (size < RDISK_MIN_BYTES) size = RDISK_MIN_BYTES;
        if (rt->disk_images)
            ok = _make_image(rt, img, size, err);
        else
            TLOG_WARN("kernel disk size not enforced", "kernel=%s bytes=%lld why=\"%s\"", id,
                      (long long)size, rt->disk_why);
    }
    if (ok && _exists(img)) ok = _mount_image(img, disk, err);
    /* the old container's root file system changes and /etc files go; its
     * home stays */
    static const char *const sub[] = {"upper", "work", "home", "etc"};
    static const mode_t modes[] = {0755, 0750, 0755, 0750};
    for (size_t i = 0; ok && i < TS_ARRAY_LEN(sub); i++) {
        char *path = ts_asprintf("%s/%s", disk, sub[i]);
        if (*kept && strcmp(sub[i], "home") != 0) rts_rm_tree(path);
        ok = _mkdir(path, modes[i], err);
        free(path);
    }
    if (ok && *kept) TLOG_INFO("kernel disk kept from the previous generation", "kernel=%s", id);
    free(img);
    free(disk);
    return ok;
}

bool rdisk_sized(const char *kdir)
{
    char *img = ts_asprintf("%s/" RDISK_IMAGE, kdir);
    bool sized = _exists(img);
    free(img);
    return sized;
}

char *rdisk_stage_file(const char *kdir, const char *src, const char *name, ts_err *err)
{
    char *dir = ts_asprintf("%s/" RDISK_DIR "/.tessera", kdir);
    char *dst = ts_asprintf("%s/%s", dir, name);
    int in = -1, out = -1;
    bool ok = _mkdir(dir, 0755, err);
    if (ok) {
        in = open(src, O_RDONLY | O_CLOEXEC);
        (void)unlink(dst);
        out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0555);
        ok = in >= 0 && out >= 0;
        if (!ok) ts_err_set(err, "copy %s to %s: %s", src, dst, strerror(errno));
    }
    char *buf = ok ? ts_malloc(1 << 16) : NULL;
    while (ok) { /* read and write: copy_file_range refuses another file system (EXDEV) */
        ssize_t n = read(in, buf, 1 << 16);
        if (n == 0) break;
        ok = n > 0 && write(out, buf, (size_t)n) == n;
        if (!ok) ts_err_set(err, "copy %s to %s: %s", src, dst, strerror(errno));
    }
    free(buf);
    if (in >= 0) close(in);
    if (out >= 0 && close(out) != 0 && ok) {
        ts_err_set(err, "copy %s to %s: %s", src, dst, strerror(errno));
        ok = false;
    }
    free(dir);
    if (!ok) {
        (void)unlink(dst);
        free(dst);
        return NULL;
    }
    return dst;
}

bool rdisk_unmount(const char *kdir, ts_err *err)
{
    char *disk = ts_asprintf("%s/" RDISK_DIR, kdir);
    bool ok = overlay_unmount(disk, err); /* any file system: by its mount point */
    free(disk);
    return ok;
}

bool rdisk_keep(runtime *rt, const char *id, const char *kdir, ts_err *err)
{
    char *dir = _kept_dir(rt, id);
    char *to = ts_asprintf("%s/" RDISK_DIR, dir);
    char *disk = ts_asprintf("%s/" RDISK_DIR, kdir);
    char *old_home = ts_asprintf("%s/home", kdir);
    rts_rm_tree(dir); /* a stale one */
    char *img = ts_asprintf("%s/" RDISK_IMAGE, kdir);
    char *img_to = ts_asprintf("%s/" RDISK_IMAGE, dir);
    bool ok = _mkdir(dir, 0700, err);
    if (ok && _exists(disk)) {
        ok = _rename(disk, to, err);
        if (ok && _exists(img)) ok = _rename(img, img_to, err);
    } else if (ok && _exists(old_home)) { /* made by an agent before the disk */
        char *home = ts_asprintf("%s/home", to);
        ok = _mkdir(to, 0755, err) && _rename(old_home, home, err);
        free(home);
    }
    if (ok) TLOG_INFO("kernel disk kept for the next generation", "kernel=%s", id);
    free(img_to);
    free(img);
    free(old_home);
    free(disk);
    free(to);
    free(dir);
    return ok;
}

void rdisk_discard_kept(runtime *rt, const char *id)
{
    char *dir = _kept_dir(rt, id);
    if (_exists(dir)) {
        rts_rm_tree(dir);
        TLOG_INFO("kept kernel disk removed", "kernel=%s", id);
    }
    free(dir);
}

char *rdisk_home(runtime *rt, const char *id)
{
    char *home = rts_kpath(rt, id, RDISK_DIR "/home");
    if (_exists(home)) return home;
    free(home);
    return rts_kpath(rt, id, "home"); /* a kernel of an agent before the disk */
}
