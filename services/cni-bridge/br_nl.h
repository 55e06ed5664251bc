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

/* The link's index (0: there is no such link) and kind ("bridge", "veth",
 * "" for none; kind may be NULL); false on error (err set). */
bool br_nl_link_get(br_nl *n, const char *name, int *index, char *kind, size_t kind_size,
                    ts_err *err) TS_MUST_CHECK;
/* Create the bridge if there is none; either way it ends up up. An existing
 * link of that name that is not a bridge is an error. *index: its index.
 * fixed_mac: a bridge made here gets a MAC of its own (random, locally
 * administered) instead of following its ports', which changes as ports
 * come and go, flushing the bridge's neighbour entries, permanent ones
 * too, and the containers' ARP entry of the gateway; an existing bridge
 * whose MAC still follows its ports gets its current one fixed. */
bool br_nl_bridge_ensure(br_nl *n, const char *name, int mtu, bool fixed_mac, bool no_netfilter,
                         int *index, ts_err *err) TS_MUST_CHECK;
/* no_netfilter: a bridge made here passes its frames by the host's
 * iptables, ip6tables and arptables (nf_call_* 0). */
/* Add an IPv4 address (one already there is not an error). */
bool br_nl_addr_add(br_nl *n, int ifindex, struct in_addr a, int prefix, ts_err *err) TS_MUST_CHECK;
/* A veth pair, both ends down: host (in this namespace, a port of master)
 * and peer (created in the namespace of peer_ns_fd). errno EEXIST in *eexist
 * when a name is taken. */
bool br_nl_veth_create(br_nl *n, const char *host, const char *peer, int peer_ns_fd, int master,
                       int mtu, bool *eexist, ts_err *err) TS_MUST_CHECK;
/* A bridge port's settings, in one request: hairpin mode (IFLA_BRPORT_MODE)
 * and, with isolate, isolated (no forwarding to other isolated ports),
 * locked (only source MACs with an FDB entry on this port pass) and no
 * learning. */
bool br_nl_port_set(br_nl *n, int ifindex, bool hairpin, bool isolate, ts_err *err) TS_MUST_CHECK;
/* A static FDB entry: frames to mac go out of bridge port ifindex, and a
 * locked port accepts frames from it (bridge fdb replace ... master static). */
bool br_nl_fdb_static(br_nl *n, int ifindex, const unsigned char mac[6], ts_err *err) TS_MUST_CHECK;
/* A permanent IPv4 neighbour entry a -> mac on ifindex (replaces one there),
 * which ARP answers cannot change; and its removal (none there: not an
 * error). */
bool br_nl_neigh_permanent(br_nl *n, int ifindex, struct in_addr a, const unsigned char mac[6],
                           ts_err *err) TS_MUST_CHECK;
bool br_nl_neigh_del(br_nl *n, int ifindex, struct in_addr a, ts_err *err) TS_MUST_CHECK;
bool br_nl_link_up(br_nl *n, int ifindex, ts_err *err) TS_MUST_CHECK;
/* A route to dst/prefix through gw (0: on-link) out of ifindex, main table
 * (one already there is not an error). */
bool br_nl_route_add(br_nl *n, int ifindex, struct in_addr dst, int prefix, struct in_addr gw,
                     ts_err *err) TS_MUST_CHECK;
/* A VXLAN device (learning on, UDP from local to port, id vni), made if
 * there is none (an existing link of that name that is not one is an
 * error), a port of master, up; *index its index. */
typedef struct br_vxlan_spec {
    const char *name;
    uint32_t vni;
    int port;
    struct in_addr local;
    int mtu; /* 0: the kernel's */
} br_vxlan_spec;
bool br_nl_vxlan_ensure(br_nl *n, const br_vxlan_spec *x, int master, int *index,
                        ts_err *err) TS_MUST_CHECK;
/* A flood entry on VXLAN device ifindex: broadcast and unknown frames go
 * to remote too (bridge fdb append 00:00:00:00:00:00 dev ... dst remote);
 * one there already is not an error. */
bool br_nl_fdb_flood(br_nl *n, int ifindex, struct in_addr remote, ts_err *err) TS_MUST_CHECK;
/* How many links are ports of master, except link except (0: none). */
bool br_nl_ports(br_nl *n, int master, int except, int *count, ts_err *err) TS_MUST_CHECK;
/* Delete the link; one that is not there is not an error. */
bool br_nl_link_del(br_nl *n, const char *name, ts_err *err) TS_MUST_CHECK;

/* "aa:bb:cc:dd:ee:ff" of ifname in the calling thread's namespace, or "". */
void br_mac(const char *ifname, char out[18]);
/* "aa:bb:cc:dd:ee:ff" into 6 bytes; false when it is not a MAC. */
bool br_mac_parse(const char *text, unsigned char mac[6]) TS_MUST_CHECK;

#endif
