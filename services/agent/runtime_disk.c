/* runtime_disk.c: a kernel's disk, kept across a restart (runtime_disk.h). */
#include "services/agent/runtime_disk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcommon/log.h"

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

/* The kept disk back into kdir; true with *kept false when there is none. */
static bool _take_kept(runtime *rt, const char *id, const char *disk, bool *kept, ts_err *err)
{
    char *dir = _kept_dir(rt, id);
    char *from = ts_asprintf("%s/" RDISK_DIR, dir);
    bool ok = true;
    *kept = _exists(from);
    if (*kept) ok = _rename(from, disk, err);
    if (ok) rts_rm_tree(dir); /* empty now, or a leftover without a disk */
    free(from);
    free(dir);
    return ok;
}

bool rdisk_prepare(runtime *rt, const char *id, const char *kdir, bool *kept, ts_err *err)
{
    char *disk = ts_asprintf("%s/" RDISK_DIR, kdir);
    bool ok = _take_kept(rt, id, disk, kept, err);
    if (ok && !*kept) ok = _mkdir(disk, 0755, err);
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
    bool ok = _mkdir(dir, 0700, err);
    if (ok && _exists(disk)) {
        ok = _rename(disk, to, err);
    } else if (ok && _exists(old_home)) { /* made by an agent before the disk */
        char *home = ts_asprintf("%s/home", to);
        ok = _mkdir(to, 0755, err) && _rename(old_home, home, err);
        free(home);
    }
    if (ok) TLOG_INFO("kernel disk kept for the next generation", "kernel=%s", id);
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
