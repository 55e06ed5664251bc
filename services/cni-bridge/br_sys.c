/* br_sys.c: /proc/sys/net settings (br_sys.h). */
#include "services/cni-bridge/br_sys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Write value to /proc/sys/net/<family>/<dir>/<ifname>/<key>, unless it
 * already holds it. */
static bool _set(const char *family, const char *dir, const char *ifname, const char *key,
                 const char *value, ts_err *err)
{
    char path[160];
    if (!*ifname || strchr(ifname, '/') || strcmp(ifname, ".") == 0 || strcmp(ifname, "..") == 0) {
        ts_err_set(err, "interface name '%s' is not usable", ifname);
        return false;
    }
    snprintf(path, sizeof(path), "/proc/sys/net/%s/%s/%s/%s", family, dir, ifname, key);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        ts_err_set(err, "open %s: %s", path, strerror(errno));
        return false;
    }
    char cur[16] = "";
    ssize_t k = read(fd, cur, sizeof(cur) - 1);
    size_t vlen = strlen(value);
    bool ok = k > 0 && (size_t)k >= vlen && strncmp(cur, value, vlen) == 0 &&
              (cur[vlen] == '\n' || cur[vlen] == '\0');
    if (!ok) ok = pwrite(fd, value, vlen, 0) == (ssize_t)vlen;
    if (!ok) ts_err_set(err, "set %s to %s: %s", path, value, strerror(errno));
    close(fd);
    return ok;
}

bool br_sys_proxy_arp(const char *bridge, ts_err *err)
{
    return _set("ipv4", "conf", bridge, "proxy_arp", "1", err) &&
           _set("ipv4", "conf", bridge, "proxy_arp_pvlan", "1", err) &&
           _set("ipv4", "neigh", bridge, "proxy_delay", "0", err);
}

bool br_sys_ipv6_off(const char *ifname, ts_err *err)
{
    if (access("/proc/sys/net/ipv6", F_OK) != 0) return true; /* no IPv6 in this kernel */
    return _set("ipv6", "conf", ifname, "disable_ipv6", "1", err);
}
