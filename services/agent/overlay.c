/* overlay.c: mount and unmount a kernel's overlayfs root. */
#include "services/agent/overlay.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* Mount options must fit in one page. */
#define OVL_OPTS_MAX 4000
/* <base>/l/<i>: a symlink to layer i, named in the options instead of it */
#define OVL_LINKS "l"

static bool _safe_path(const char *p)
{
    return p && p[0] == '/' && !strpbrk(p, ",:\\\n");
}

static bool _safe_rel(const char *p)
{
    return p && *p && p[0] != '/' && !strpbrk(p, ",:\\\n");
}

/* The lowerdir, upperdir and workdir options, all relative to the base dir:
 * "lowerdir=l/2:l/1:l/0,upperdir=...,workdir=..." (top-most layer first). */
static bool _options(const overlay_spec *o, char *opts, ts_err *err)
{
    size_t len = (size_t)snprintf(opts, OVL_OPTS_MAX, "lowerdir=");
    if (o->n_layers <= 0) len += (size_t)snprintf(opts + len, OVL_OPTS_MAX - len, "%s", o->empty);
    for (int i = o->n_layers - 1; i >= 0; i--) {
        int n = snprintf(opts + len, OVL_OPTS_MAX - len, "%s" OVL_LINKS "/%d",
                         i == o->n_layers - 1 ? "" : ":", i);
        if (n < 0 || len + (size_t)n >= OVL_OPTS_MAX) {
            ts_err_set(err, "image has too many layers (%d) for one overlay mount", o->n_layers);
            return false;
        }
        len += (size_t)n;
    }
    int n = snprintf(opts + len, OVL_OPTS_MAX - len, ",upperdir=%s,workdir=%s", o->upper, o->work);
    if (n < 0 || len + (size_t)n >= OVL_OPTS_MAX) {
        ts_err_set(err, "overlay mount options too long");
        return false;
    }
    return true;
}

/* <base>/l/<i> -> layers[i], made anew. */
static bool _links(const overlay_spec *o, ts_err *err)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/" OVL_LINKS, o->base);
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        ts_err_set(err, "mkdir %s: %s", path, strerror(errno));
        return false;
    }
    for (int i = 0; i < o->n_layers; i++) {
        if (!_safe_path(o->layers[i])) {
            ts_err_set(err, "layer path '%s' cannot be used in an overlay mount", o->layers[i]);
            return false;
        }
        snprintf(path, sizeof(path), "%s/" OVL_LINKS "/%d", o->base, i);
        (void)unlink(path);
        if (symlink(o->layers[i], path) != 0) {
            ts_err_set(err, "symlink %s: %s", path, strerror(errno));
            return false;
        }
    }
    return true;
}

/* The mount, from a thread of its own whose working directory is the base
 * dir (unshare(CLONE_FS) gives the thread its own, so the agent's other
 * threads never see it move): the kernel resolves the relative names from
 * there and keeps them as given, so they are what the container's
 * /proc/self/mountinfo shows. */
typedef struct mount_job {
    const overlay_spec *o;
    const char *opts;
    int rc, e;
    const char *step;
} mount_job;

static void *_mount_thread(void *arg)
{
    mount_job *j = arg;
    j->rc = -1;
    if (unshare(CLONE_FS) != 0) {
        j->step = "unshare(CLONE_FS)";
    } else if (chdir(j->o->base) != 0) {
        j->step = "chdir";
    } else {
        j->step = "mount overlay";
        j->rc = mount("overlay", j->o->target, "overlay", MS_NODEV, j->opts);
    }
    j->e = j->rc == 0 ? 0 : errno;
    return NULL;
}

bool overlay_mount(const overlay_spec *o, ts_err *err)
{
    if (!_safe_path(o->base) || !_safe_rel(o->upper) || !_safe_rel(o->work) ||
        (o->n_layers <= 0 && !_safe_rel(o->empty))) {
        ts_err_set(err, "base, upper, work or empty path cannot be used in an overlay mount");
        return false;
    }
    char *opts = ts_malloc(OVL_OPTS_MAX + 1);
    bool ok = _links(o, err) && _options(o, opts, err);
    if (ok) {
        mount_job j = {.o = o, .opts = opts};
        pthread_t t;
        int rc = pthread_create(&t, NULL, _mount_thread, &j);
        if (rc != 0) {
            ts_err_set(err, "mount thread: %s", strerror(rc));
            ok = false;
        } else {
            pthread_join(t, NULL);
            ok = j.rc == 0;
            if (!ok) ts_err_set(err, "%s on %s: %s", j.step, o->target, strerror(j.e));
        }
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
