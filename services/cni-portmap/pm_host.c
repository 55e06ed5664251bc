/* pm_host.c: the lock, iptables-save/-restore and route_localnet (pm_host.h). */
#include "services/cni-portmap/pm_host.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "libcommon/ipt.h"

bool pm_lock(const char *path, int *fd_out, ts_err *err)
{
    *fd_out = -1;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        ts_err_set(err, "open %s: %s", path, strerror(errno));
        return false;
    }
    while (flock(fd, LOCK_EX) < 0) {
        if (errno == EINTR) continue;
        ts_err_set(err, "flock %s: %s", path, strerror(errno));
        close(fd);
        return false;
    }
    *fd_out = fd;
    return true;
}

bool pm_ipt_save(char **out, ts_err *err)
{
    const char *args[] = {"-t", "nat", NULL};
    return ipt_run("iptables-save", args, NULL, out, err);
}

bool pm_ipt_restore(const char *rules, ts_err *err)
{
    const char *args[] = {"--noflush", "--wait=10", NULL};
    return ipt_run("iptables-restore", args, rules, NULL, err);
}

bool pm_route_iface(const char *ip, char ifname[IF_NAMESIZE])
{
    struct in_addr a;
    if (inet_pton(AF_INET, ip, &a) != 1) return false;
    FILE *f = fopen("/proc/net/route", "re");
    if (!f) return false;
    char line[512];
    int best = -1;
    /* Iface Destination Gateway Flags RefCnt Use Metric Mask ...; addresses
     * in hex as the kernel holds them (network byte order), like s_addr. */
    while (fgets(line, sizeof(line), f)) {
        char name[64];
        unsigned dst, gw, flags, mask;
        int refcnt, use, metric;
        if (sscanf(line, "%63s %x %x %x %d %d %d %x", name, &dst, &gw, &flags, &refcnt, &use,
                   &metric, &mask) != 8)
            continue;                                                        /* the header */
        if (mask == 0 || !(flags & 1) || (a.s_addr & mask) != dst) continue; /* RTF_UP */
        int bits = __builtin_popcount(mask);
        if (bits > best && strlen(name) < IF_NAMESIZE) {
            best = bits;
            snprintf(ifname, IF_NAMESIZE, "%s", name);
        }
    }
    fclose(f);
    return best >= 0;
}

static char *_localnet_path(const char *ifname)
{
    if (!*ifname || strchr(ifname, '/') || strcmp(ifname, ".") == 0 || strcmp(ifname, "..") == 0)
        return NULL;
    return ts_asprintf("/proc/sys/net/ipv4/conf/%s/route_localnet", ifname);
}

bool pm_route_localnet_set(const char *ifname, ts_err *err)
{
    char *path = _localnet_path(ifname);
    if (!path) {
        ts_err_set(err, "interface name '%s' is not usable", ifname);
        return false;
    }
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    bool ok = fd >= 0 && write(fd, "1", 1) == 1;
    if (!ok) ts_err_set(err, "set %s: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    free(path);
    return ok;
}

bool pm_route_localnet_on(const char *ifname)
{
    char *path = _localnet_path(ifname);
    if (!path) return false;
    FILE *f = fopen(path, "re");
    free(path);
    if (!f) return false;
    int v = 0;
    bool ok = fscanf(f, "%d", &v) == 1 && v == 1;
    fclose(f);
    return ok;
}
