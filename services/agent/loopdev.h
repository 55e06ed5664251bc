/* loopdev.h: a file as a block device (a loop device), for a kernel's
 * size-limited disk (runtime_disk.h).
 *
 * The device is set up with autoclear: it goes away by itself when its last
 * user lets go, that is once the file system mounted from it is unmounted
 * (and, before that, when the descriptor loopdev_attach returns is closed
 * without a mount: a crash between the two leaves nothing). Direct I/O is
 * asked for, so the backing file's pages are not cached twice. */
#ifndef AGENT_LOOPDEV_H
#define AGENT_LOOPDEV_H

#include "libcommon/common.h"

/* Whether loop devices can be had here (/dev/loop-control); false with why. */
bool loopdev_available(char *why, size_t why_size) TS_MUST_CHECK;

/* Attach image to a free loop device: its path in dev, *fd open on it (the
 * caller mounts dev, then closes *fd). Retries when another process takes
 * the same free device first. */
bool loopdev_attach(const char *image, char *dev, size_t dev_size, int *fd,
                    ts_err *err) TS_MUST_CHECK;

#endif
