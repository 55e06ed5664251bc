/* netsys.c: see netsys.h. */
#include "services/agent/netsys.h"

#include "libcommon/log.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char root[PATH_MAX] = "/sys";
static bool own;

/* The network devices of this process's namespace (/proc/self/net/dev) or
 * of /sys's, as one sorted, newline-separated list; NULL when unreadable. */
static int _cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *_devices(bool proc)
{
    char *names[1024];
    size_t n = 0;
    if (proc) {
        FILE *f = fopen("/proc/self/net/dev", "re");
        if (!f) return NULL;
        char line[512];
        for (int i = 0; fgets(line, sizeof(line), f) && n < TS_ARRAY_LEN(names); i++) {
            char *colon = strchr(line, ':'), *p = line;
            if (i < 2 || !colon) continue; /* the two header lines */
            *colon = '\0';
            while (*p == ' ')
                p++;
            names[n++] = ts_strdup(p);
        }
        fclose(f);
    } else {
        DIR *d = opendir("/sys/class/net");
        if (!d) return NULL;
        struct dirent *e;
        /* devices are links; a file such as bonding_masters is none */
        while ((e = readdir(d)) && n < TS_ARRAY_LEN(names))
            if (e->d_name[0] != '.' && e->d_type != DT_REG) names[n++] = ts_strdup(e->d_name);
        closedir(d);
    }
    qsort(names, n, sizeof(names[0]), _cmp);
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(names[i]) + 1;
    char *out = ts_calloc(1, len);
    for (size_t i = 0; i < n; i++) {
        strcat(out, names[i]);
        strcat(out, "\n");
        free(names[i]);
    }
    return out;
}

/* /sys lists this process's network devices: it was mounted in this
 * namespace. (pid 1's namespace would say it too, but a process may not be
 * allowed to look at pid 1's.) A device made or gone between the two reads
 * makes them differ: three tries. */
static bool _host_netns(void)
{
    for (int i = 0; i < 3; i++) {
        char *a = _devices(true), *b = _devices(false);
        bool same = a && b && strcmp(a, b) == 0;
        free(a);
        free(b);
        if (same) return true;
        usleep(10000);
    }
    return false;
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
