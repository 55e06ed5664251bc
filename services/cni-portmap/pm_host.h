/* pm_host.h: what tessera-portmap does to the host: one lock for every run
 * on the host, iptables-save / iptables-restore of the nat table (exec'd with
 * pipes, libcommon/proc.c), and route_localnet on the interface that
 * routes to the container (so 127.0.0.1:<host port> can be DNATed to it). */
#ifndef PM_HOST_H
#define PM_HOST_H

#include <net/if.h>

#include "libcommon/common.h"

#define PM_LOCK_PATH "/run/tessera-portmap.lock"

/* An exclusive flock on path (created 0600) in *fd, held until the process
 * exits (or the fd is closed). false with err set. */
bool pm_lock(const char *path, int *fd, ts_err *err) TS_MUST_CHECK;

/* `iptables-save -t nat`: *out is its output (heap). */
bool pm_ipt_save(char **out, ts_err *err) TS_MUST_CHECK;
/* `iptables-restore --noflush --wait=10` with rules on its stdin. */
bool pm_ipt_restore(const char *rules, ts_err *err) TS_MUST_CHECK;

/* The interface of the most specific non-default route to ip (IPv4, from
 * /proc/net/route); false when there is none. */
bool pm_route_iface(const char *ip, char ifname[IF_NAMESIZE]) TS_MUST_CHECK;
/* net.ipv4.conf.<ifname>.route_localnet: set it to 1, or read it. */
bool pm_route_localnet_set(const char *ifname, ts_err *err) TS_MUST_CHECK;
bool pm_route_localnet_on(const char *ifname) TS_MUST_CHECK;

#endif
