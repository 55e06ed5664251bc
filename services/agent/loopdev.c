/* loopdev.c: a file as a block device (loopdev.h). */
#include "services/agent/loopdev.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define LOOP_CONTROL "/dev/loop-control"
#define ATTACH_TRIES 16

bool loopdev_available(char *why, size_t why_size)
{
    int fd = open(LOOP_CONTROL, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, why_size, "%s: %s", LOOP_CONTROL, strerror(errno));
        return false;
    }
    close(fd);
    return true;
}

/* LOOP_CONFIGURE (Linux 5.8), or the two older calls. */
static int _configure(int dev_fd, int file_fd, const char *image)
{
    struct loop_config c;
    memset(&c, 0, sizeof(c));
    c.fd = (unsigned)file_fd;
    c.info.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO;
    snprintf((char *)c.info.lo_file_name, sizeof(c.info.lo_file_name), "%s", image);
    if (ioctl(dev_fd, LOOP_CONFIGURE, &c) == 0) return 0;
    if (errno != EINVAL && errno != ENOTTY) return -1;
    if (ioctl(dev_fd, LOOP_SET_FD, file_fd) != 0) return -1;
    if (ioctl(dev_fd, LOOP_SET_STATUS64, &c.info) == 0) return 0;
    int e = errno;
    (void)ioctl(dev_fd, LOOP_CLR_FD, 0);
    errno = e;
    return -1;
}

bool loopdev_attach(const char *image, char *dev, size_t dev_size, int *fd, ts_err *err)
{
    *fd = -1;
    int file_fd = open(image, O_RDWR | O_CLOEXEC);
    if (file_fd < 0) {
        ts_err_set(err, "open %s: %s", image, strerror(errno));
        return false;
    }
    int ctl = open(LOOP_CONTROL, O_RDWR | O_CLOEXEC);
    if (ctl < 0) {
        ts_err_set(err, "%s: %s", LOOP_CONTROL, strerror(errno));
        close(file_fd);
        return false;
    }
    bool ok = false;
    for (int i = 0; i < ATTACH_TRIES && !ok; i++) {
        int n = ioctl(ctl, LOOP_CTL_GET_FREE);
        if (n < 0) {
            ts_err_set(err, "no free loop device: %s", strerror(errno));
            break;
        }
        snprintf(dev, dev_size, "/dev/loop%d", n);
        int d = open(dev, O_RDWR | O_CLOEXEC);
        if (d < 0) {
            ts_err_set(err, "open %s: %s", dev, strerror(errno));
            if (errno == ENOENT) continue; /* its node not made yet */
            break;
        }
        if (_configure(d, file_fd, image) == 0) {
            *fd = d;
            ok = true;
        } else {
            ts_err_set(err, "attach %s to %s: %s", image, dev, strerror(errno));
            close(d);
            if (errno != EBUSY) break; /* EBUSY: someone took it first */
        }
    }
    close(ctl);
    close(file_fd);
    return ok;
}
