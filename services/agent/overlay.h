/* overlay.h: a kernel's root filesystem, overlayfs over the image's layers.
 *
 * lowerdir = the layers, top-most first (image_info lists them lowest first);
 * upperdir/workdir are the kernel's own (<kernel>/disk/upper, disk/work), so
 * the container's writes never touch the shared layer cache.
 *
 * The options name no host path: the kernel shows them as given in the
 * container's /proc/self/mountinfo, so they are relative to the kernel dir
 * (the mount runs with that as its working directory) and the layers are
 * reached through symlinks there, <kernel>/l/<i> -> the cached layer:
 *   lowerdir=l/1:l/0,upperdir=disk/upper,workdir=disk/work */
#ifndef AGENT_OVERLAY_H
#define AGENT_OVERLAY_H

#include "container.h"

typedef struct overlay_spec {
    const char *target;  /* where to mount (absolute) */
    const char *base;    /* the kernel dir (absolute): the names below are relative to it */
    char *const *layers; /* absolute, lowest first (image_info order) */
    int n_layers;
    const char *upper, *work; /* relative to base */
    const char *empty;        /* relative to base: the single lower layer when there is none */
} overlay_spec;

/* Mount the overlay at o->target, making the layer links in o->base. */
bool overlay_mount(const overlay_spec *o, ts_err *err) TS_MUST_CHECK;

/* Unmount target (lazily if busy); true when nothing is mounted there any more
 * (also when nothing was). */
bool overlay_unmount(const char *target, ts_err *err) TS_MUST_CHECK;

/* Whether a mount point sits at path (from /proc/self/mountinfo). */
bool overlay_is_mounted(const char *path) TS_MUST_CHECK;

#endif
