/* br_sys.h: the /proc/sys/net settings tessera-bridge makes (br_conf.h,
 * portIsolation and disableIPv6). A path names the interface as the calling
 * thread's network namespace sees it: /proc/sys/net follows the namespace of
 * whoever opens it. */
#ifndef BR_SYS_H
#define BR_SYS_H

#include "libcommon/common.h"

/* With portIsolation, on the bridge: proxy_arp and proxy_arp_pvlan (the host
 * answers a container's ARP for a neighbour on the same bridge, whose ports
 * are isolated) and neigh proxy_delay 0 (answer at once, not after up to
 * 0.8 s). */
bool br_sys_proxy_arp(const char *bridge, ts_err *err) TS_MUST_CHECK;
/* net.ipv6.conf.<ifname>.disable_ipv6 = 1 (before the link is up, it never
 * gets a link-local address). A kernel without IPv6 is not an error. */
bool br_sys_ipv6_off(const char *ifname, ts_err *err) TS_MUST_CHECK;

#endif
