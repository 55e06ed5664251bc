/* overlay.h: a kernel's root filesystem, overlayfs over the image's layers.
 *
 * lowerdir = the layers, top-most first (image_info lists them lowest first);
 * upperdir/workdir are the kernel's own (<kernel>/upper, <kernel>/work-ovl),
 * so the container's writes never touch the shared layer cache. */
#ifndef AGENT_OVERLAY_H
#define AGENT_OVERLAY_H

#include "container.h"

/* Mount the overlay at target. layers lowest first (image_info order); with no
 * layer, empty_dir stands in as the single lower layer. */
bool overlay_mount(const char *target, char *const *layers, int n_layers, const char *upper,
                   const char *work, const char *empty_dir, ts_err *err) TS_MUST_CHECK;

/* Unmount target (lazily if busy); true when nothing is mounted there any more
 * (also when nothing was). */
bool overlay_unmount(const char *target, ts_err *err) TS_MUST_CHECK;

/* Whether a mount point sits at path (from /proc/self/mountinfo). */
bool overlay_is_mounted(const char *path) TS_MUST_CHECK;

#endif
