/* netsys.c: see netsys.h. */
#include "services/agent/netsys.h"

#include "libcommon/log.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char root[PATH_MAX] = "/sys";
static bool own;

/* This process and pid 1 are in the same network namespace. */
static bool _host_netns(void)
{
    struct stat a, b;
    if (stat("/proc/self/ns/net", &a) != 0 || stat("/proc/1/ns/net", &b) != 0) return true;
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

bool netsys_setup(const char *state_dir, ts_err *err)
{
    if (_host_netns()) return true;
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof(path), "%s/sys", state_dir) >= sizeof(path)) {
        ts_err_set(err, "agent.state_dir is too long for its sysfs mount");
        return false;
    }
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        ts_err_set(err, "mkdir %s: %s", path, strerror(errno));
        return false;
    }
    /* an earlier agent's (killed before it unmounted): of another
     * namespace, maybe; a fresh one is mounted below */
    while (umount2(path, MNT_DETACH) == 0) {
    }
    if (mount("sysfs", path, "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) {
        ts_err_set(err, "mount sysfs at %s (this agent is in a network namespace of its own): %s",
                   path, strerror(errno));
        return false;
    }
    pthread_mutex_lock(&mu);
    ts_strlcpy(root, path, sizeof(root));
    own = true;
    pthread_mutex_unlock(&mu);
    TLOG_INFO("network devices read from a sysfs of this namespace", "sysfs=%s", path);
    return true;
}

void netsys_path(char *buf, size_t size, const char *ifname, const char *rel)
{
    pthread_mutex_lock(&mu);
    snprintf(buf, size, "%s/class/net/%s%s%s", root, ifname, rel && *rel ? "/" : "",
             rel ? rel : "");
    pthread_mutex_unlock(&mu);
}

void netsys_teardown(void)
{
    pthread_mutex_lock(&mu);
    if (own && umount2(root, MNT_DETACH) != 0)
        TLOG_WARN("sysfs not unmounted", "sysfs=%s error=\"%s\"", root, strerror(errno));
    ts_strlcpy(root, "/sys", sizeof(root));
    own = false;
    pthread_mutex_unlock(&mu);
}
