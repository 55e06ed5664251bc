/* br_conf.h: tessera-bridge's input, checked before anything touches the
 * host.
 *
 * Config (CNI 0.3.0 to 1.0.0): the keys of the reference `bridge` plugin
 * that the agent writes, with its meaning and defaults:
 *   cniVersion, name, type
 *   bridge        the bridge's name (default "cni0"; at most 15 characters)
 *   isGateway     the bridge holds the gateway address (and ip_forward is on)
 *   isDefaultGateway  isGateway and a default route through it
 *   hairpinMode   the host end of the veth reflects traffic back (so a
 *                 container reaches itself through a published port)
 *   mtu           of the veth pair (default: the kernel's, 1500)
 *   portIsolation (ours, default false) no layer-2 path between containers:
 *                 the host end is an isolated, locked bridge port without
 *                 learning, with a static FDB entry for the container's MAC
 *                 (frames from any other source MAC are dropped), the host
 *                 keeps a permanent neighbour entry for the container's
 *                 address (the bridge's MAC is fixed, so that ports coming
 *                 and going do not flush it), and the bridge answers ARP
 *                 for its neighbours
 *                 (proxy_arp, proxy_arp_pvlan), so containers reach each
 *                 other only through the host's IP layer (its FORWARD chain)
 *   disableIPv6   (ours, default false) IPv6 off on the bridge and on both
 *                 ends of the veth pair (no link-local path to the host)
 *   ipMasq        must be false: the agent masquerades each network with one
 *                 rule (docs/agent.md, "Networking")
 *   ipam          type "host-local" only, and what tessera-bridge needs of it:
 *                 one IPv4 range (`ranges: [[{subnet, rangeStart, rangeEnd,
 *                 gateway}]]`, or `subnet` and the rest at the top level),
 *                 `routes` [{dst, gw}], `dataDir` (default
 *                 /var/lib/cni/networks)
 * The addresses are kept as host-local keeps them (br_ipam.h), so a host can
 * move between this plugin and Debian's bridge + host-local. Other keys are
 * ignored, as CNI plugins do.
 *
 * A cluster session's network (ours; the agent's second interface of a
 * kernel of a session of several kernels, docs/agent.md "The cluster
 * network"):
 *   ipam          type "static" (the reference plugin's shape): `addresses`
 *                 [{address: "a.b.c.d/len"}], one IPv4 address, no lease
 *                 store, no gateway; `dataDir` holds the lock below
 *   bridgeNetfilter  (default true) false: the bridge's frames skip the
 *                 host's iptables (nf_call_iptables 0; set when it is made)
 *   removeIdleBridge  (default false) DEL removes the bridge, and its
 *                 VXLAN device, once no other port is left on it
 *   vxlan         {name, vni, port, local, remotes: [...]}: a VXLAN device
 *                 (learning) on the bridge, its UDP from `local` to `port`
 *                 of each remote, which gets broadcasts (a flood entry in
 *                 its FDB); none when there are no remotes
 * The ADD and DEL of such networks hold an exclusive lock
 * (<dataDir>/cluster.lock), so that a bridge another DEL is removing is
 * never joined. */
#ifndef BR_CONF_H
#define BR_CONF_H

#include <jansson.h>
#include <net/if.h>
#include <netinet/in.h>

#include "libcommon/common.h"
#include "libcommon/cnip.h"

/* tessera-bridge's own error codes (the spec's are in cnip.h). */
enum {
    BR_E_NETLINK = 100, /* a netlink request failed */
    BR_E_IPAM = 101,    /* no free address, or the lease store failed */
    BR_E_MISSING = 102, /* CHECK: the interface or lease is not there */
};

#define BR_MAX_ROUTES 16
#define BR_MAX_REMOTES 64

/* A VXLAN device on the bridge (vxlan.on), to other nodes. */
typedef struct br_vxlan {
    bool on;
    char name[IF_NAMESIZE];
    uint32_t vni; /* 1 to 16777215 */
    int port;     /* UDP, host order */
    struct in_addr local;
    struct in_addr remotes[BR_MAX_REMOTES];
    int n_remotes;
} br_vxlan;

typedef struct br_route {
    struct in_addr dst, gw; /* gw 0: through the range's gateway */
    int prefix;
} br_route;

typedef struct br_conf {
    char cni_version[16];
    char name[CNIP_MAX_NAME + 1];
    char bridge[IF_NAMESIZE];
    bool is_gateway, default_route, hairpin;
    bool port_isolation, disable_ipv6;
    int mtu; /* 0: the kernel's default */
    /* ipam: one IPv4 range; all in network byte order */
    bool has_ipam; /* DEL needs no range */
    struct in_addr subnet, gateway, range_start, range_end;
    int prefix;
    br_route routes[BR_MAX_ROUTES];
    int n_routes;
    char data_dir[512];
    /* a cluster session's network (ours, above) */
    bool static_ipam;  /* ipam.type "static": the one address is range_start */
    bool no_netfilter; /* bridgeNetfilter: false */
    bool remove_idle;  /* removeIdleBridge */
    br_vxlan vxlan;
} br_conf;

/* Parse and check stdin for cmd (not CNIP_VERSION). false with e set. */
bool br_conf_parse(const char *text, size_t len, cnip_cmd cmd, br_conf *c,
                   cnip_error *e) TS_MUST_CHECK;

/* "a.b.c.d/len" into addr and prefix; false when it is not one. */
bool br_parse_cidr(const char *s, struct in_addr *addr, int *prefix) TS_MUST_CHECK;

#endif
