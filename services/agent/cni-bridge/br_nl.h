/* br_nl.h: the rtnetlink requests tessera-bridge makes (one socket per
 * network namespace: a socket talks to the namespace it was opened in). Each
 * request waits for the kernel's answer; errors name the request and the
 * kernel's errno. */
#ifndef BR_NL_H
#define BR_NL_H

#include <net/if.h>
#include <netinet/in.h>

#include "libcommon/common.h"

typedef struct br_nl {
    int fd;
    unsigned seq;
} br_nl;

/* A NETLINK_ROUTE socket in the calling thread's network namespace. */
bool br_nl_open(br_nl *n, ts_err *err) TS_MUST_CHECK;
void br_nl_close(br_nl *n);

/* The link's index and kind ("bridge", "veth", "" for none); 0 when there is
 * no such link, -1 on error (err set). */
int br_nl_link_get(br_nl *n, const char *name, char *kind, size_t kind_size, ts_err *err);
/* Create the bridge if there is none; either way it ends up up. An existing
 * link of that name that is not a bridge is an error. Its index, or 0. */
int br_nl_bridge_ensure(br_nl *n, const char *name, int mtu, ts_err *err);
/* Add an IPv4 address (one already there is not an error). */
bool br_nl_addr_add(br_nl *n, int ifindex, struct in_addr a, int prefix, ts_err *err) TS_MUST_CHECK;
/* A veth pair, both ends down: host (in this namespace, a port of master)
 * and peer (created in the namespace of peer_ns_fd). errno EEXIST in *eexist
 * when a name is taken. */
bool br_nl_veth_create(br_nl *n, const char *host, const char *peer, int peer_ns_fd, int master,
                       int mtu, bool *eexist, ts_err *err) TS_MUST_CHECK;
/* The bridge port's hairpin mode (IFLA_BRPORT_MODE). */
bool br_nl_hairpin(br_nl *n, int ifindex, bool on, ts_err *err) TS_MUST_CHECK;
bool br_nl_link_up(br_nl *n, int ifindex, ts_err *err) TS_MUST_CHECK;
/* A route to dst/prefix through gw (0: on-link) out of ifindex, main table
 * (one already there is not an error). */
bool br_nl_route_add(br_nl *n, int ifindex, struct in_addr dst, int prefix, struct in_addr gw,
                     ts_err *err) TS_MUST_CHECK;
/* Delete the link; one that is not there is not an error. */
bool br_nl_link_del(br_nl *n, const char *name, ts_err *err) TS_MUST_CHECK;

/* "aa:bb:cc:dd:ee:ff" of ifname in the calling thread's namespace, or "". */
void br_mac(const char *ifname, char out[18]);

#endif
