/* overlay.c: mount and unmount a kernel's overlayfs root. */
#include "services/agent/overlay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

/* Mount options must fit in one page. */
#define OVL_OPTS_MAX 4000

static bool _safe_path(const char *p)
{
    return p && p[0] == '/' && !strpbrk(p, ",:\\\n");
}

bool overlay_mount(const char *target, char *const *layers, int n_layers, const char *upper,
                   const char *work, const char *empty_dir, ts_err *err)
{
    char *opts = ts_malloc(OVL_OPTS_MAX + 1);
    size_t len = (size_t)snprintf(opts, OVL_OPTS_MAX, "lowerdir=");
    bool ok = true;
    if (n_layers <= 0) {
        len += (size_t)snprintf(opts + len, OVL_OPTS_MAX - len, "%s", empty_dir);
    }
    for (int i = n_layers - 1; i >= 0 && ok; i--) {
        if (!_safe_path(layers[i])) {
            ts_err_set(err, "layer path '%s' cannot be used in an overlay mount", layers[i]);
            ok = false;
            break;
        }
        size_t need = strlen(layers[i]) + 1;
        if (len + need >= OVL_OPTS_MAX) {
            ts_err_set(err, "image has too many layers (%d) for one overlay mount", n_layers);
            ok = false;
            break;
        }
        len += (size_t)snprintf(opts + len, OVL_OPTS_MAX - len, "%s%s",
                                i == n_layers - 1 ? "" : ":", layers[i]);
    }
    if (ok && (!_safe_path(upper) || !_safe_path(work))) {
        ts_err_set(err, "upper/work path cannot be used in an overlay mount");
        ok = false;
    }
    if (ok) {
        int n = snprintf(opts + len, OVL_OPTS_MAX - len, ",upperdir=%s,workdir=%s", upper, work);
        if (n < 0 || len + (size_t)n >= OVL_OPTS_MAX) {
            ts_err_set(err, "overlay mount options too long");
            ok = false;
        }
    }
    if (ok && mount("overlay", target, "overlay", MS_NODEV, opts) < 0) {
        ts_err_set(err, "mount overlay on %s: %s", target, strerror(errno));
        ok = false;
    }
    free(opts);
    return ok;
}

bool overlay_is_mounted(const char *path)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f) return false;
    char line[4096], mnt[2048];
    bool found = false;
    while (!found && fgets(line, sizeof(line), f)) {
        if (sscanf(line, "%*d %*d %*s %*s %2047s", mnt) == 1 && strcmp(mnt, path) == 0)
            found = true;
    }
    fclose(f);
    return found;
}

bool overlay_unmount(const char *target, ts_err *err)
{
    for (int i = 0; i < 20; i++) {
        if (umount2(target, UMOUNT_NOFOLLOW) == 0) continue; /* stacked mounts: again */
        if (errno == EINVAL || errno == ENOENT) return true; /* not a mount point */
        if (errno == EBUSY) {
            if (umount2(target, MNT_DETACH | UMOUNT_NOFOLLOW) == 0) continue;
        }
        ts_err_set(err, "umount %s: %s", target, strerror(errno));
        return false;
    }
    ts_err_set(err, "umount %s: still mounted", target);
    return false;
}
