/* tessera-bridge: a CNI plugin that attaches a container to a Linux bridge
 * through a veth pair and gives it an address, as the reference `bridge`
 * plugin with `host-local` IPAM does, in one short process of rtnetlink
 * requests instead of two Go programs.
 *
 * CNI_COMMAND ADD / DEL / CHECK / VERSION, CNI_CONTAINERID, CNI_NETNS,
 * CNI_IFNAME; the network configuration on stdin (br_conf.h).
 *   ADD    the bridge (created and brought up if missing; with isGateway it
 *          holds the range's gateway address and ip_forward is turned on),
 *          an address leased from the range (br_ipam.h), a veth pair: the
 *          host end a port of the bridge (hairpin when hairpinMode), the
 *          other CNI_IFNAME in CNI_NETNS with the address and ipam.routes
 *          through the gateway. With portIsolation the port is isolated
 *          and locked to the container's MAC, the host keeps a permanent
 *          neighbour entry for its address and the bridge answers ARP for
 *          the other containers; with disableIPv6 the bridge and both ends
 *          have no IPv6 (br_conf.h). Prints the CNI result. A failed ADD
 *          undoes what it did.
 *   DEL    drops the container's lease (and the neighbour entry of its
 *          address) and deletes CNI_IFNAME in CNI_NETNS (which takes the
 *          host end with it); what is already gone is not an error.
 *   CHECK  the lease and the interface are there.
 * An error is CNI error JSON on stdout and exit status 1. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "services/cni-bridge/br_conf.h"
#include "services/cni-bridge/br_ipam.h"
#include "services/cni-bridge/br_nl.h"
#include "services/cni-bridge/br_sys.h"

typedef struct added {
    char host[IF_NAMESIZE];
    char mac_bridge[18], mac_host[18], mac_cont[18];
    struct in_addr ip;
} added;

static bool _nl_fail(cnip_error *e, const char *what, const ts_err *err)
{
    cnip_error_set(e, BR_E_NETLINK, what, "%s", err->msg);
    return false;
}

static bool _sys_fail(cnip_error *e, const char *what, const ts_err *err)
{
    cnip_error_set(e, CNIP_E_IO, what, "%s", err->msg);
    return false;
}

static bool _ip_forward_on(cnip_error *e)
{
    const char *path = "/proc/sys/net/ipv4/ip_forward";
    char v = 0;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd >= 0 && read(fd, &v, 1) == 1 && v == '1') {
        close(fd);
        return true;
    }
    bool ok = fd >= 0 && pwrite(fd, "1", 1, 0) == 1;
    if (!ok)
        cnip_error_set(e, CNIP_E_IO, "cannot turn on IPv4 forwarding", "%s: %s", path,
                       strerror(errno));
    if (fd >= 0) close(fd);
    return ok;
}

/* Enter the namespace at path; false with e set. */
static bool _enter(int ns_fd, const char *path, cnip_error *e)
{
    if (setns(ns_fd, CLONE_NEWNET) == 0) return true;
    cnip_error_set(e, CNIP_E_IO, "cannot enter the network namespace", "%s: %s", path,
                   strerror(errno));
    return false;
}

/* A cluster network's ADD and DEL (a static address, a VXLAN device, or a
 * bridge removed when idle) hold <dataDir>/cluster.lock: a bridge a DEL is
 * removing is never joined. -1 when c is no such network; false (e set)
 * when the lock cannot be had. */
static bool _cluster_lock(const br_conf *c, int *fd, cnip_error *e)
{
    *fd = -1;
    if (!c->static_ipam && !c->vxlan.on && !c->remove_idle) return true;
    char path[600];
    snprintf(path, sizeof(path), "%s", c->data_dir[0] ? c->data_dir : "/run");
    (void)mkdir(path, 0700); /* may exist; the open below says if it is unusable */
    snprintf(path, sizeof(path), "%s/cluster.lock", c->data_dir[0] ? c->data_dir : "/run");
    *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (*fd < 0 || flock(*fd, LOCK_EX) != 0) {
        cnip_error_set(e, CNIP_E_IO, "cannot lock the cluster networks", "%s: %s", path,
                       strerror(errno));
        if (*fd >= 0) close(*fd);
        *fd = -1;
        return false;
    }
    return true;
}

/* The VXLAN device on the bridge and a flood entry per remote node. */
static bool _vxlan(br_nl *host, const br_conf *c, int br_idx, cnip_error *e)
{
    if (!c->vxlan.on || c->vxlan.n_remotes == 0) return true;
    ts_err err = {{0}};
    br_vxlan_spec x = {.name = c->vxlan.name,
                       .vni = c->vxlan.vni,
                       .port = c->vxlan.port,
                       .local = c->vxlan.local,
                       .mtu = c->mtu};
    int idx = 0;
    if (!br_nl_vxlan_ensure(host, &x, br_idx, &idx, &err))
        return _nl_fail(e, "cannot set up the VXLAN device", &err);
    if (c->disable_ipv6 && !br_sys_ipv6_off(c->vxlan.name, &err))
        return _sys_fail(e, "cannot turn IPv6 off on the VXLAN device", &err);
    for (int i = 0; i < c->vxlan.n_remotes; i++)
        if (!br_nl_fdb_flood(host, idx, c->vxlan.remotes[i], &err))
            return _nl_fail(e, "cannot reach the other nodes through the VXLAN device", &err);
    return true;
}

/* removeIdleBridge: the bridge and its VXLAN device go once no other port
 * is left on it. */
static bool _remove_idle(br_nl *host, const br_conf *c, cnip_error *e)
{
    ts_err err = {{0}};
    int br_idx = 0, vx_idx = 0, ports = 0;
    if (!br_nl_link_get(host, c->bridge, &br_idx, NULL, 0, &err))
        return _nl_fail(e, "cannot read the bridge", &err);
    if (br_idx == 0) return true;
    if (c->vxlan.on && !br_nl_link_get(host, c->vxlan.name, &vx_idx, NULL, 0, &err))
        return _nl_fail(e, "cannot read the VXLAN device", &err);
    if (!br_nl_ports(host, br_idx, vx_idx, &ports, &err))
        return _nl_fail(e, "cannot list the bridge's ports", &err);
    if (ports > 0) return true;
    if ((c->vxlan.on && !br_nl_link_del(host, c->vxlan.name, &err)) ||
        !br_nl_link_del(host, c->bridge, &err))
        return _nl_fail(e, "cannot remove the idle bridge", &err);
    return true;
}

/* The host end of the pair, with a fresh name; the container end ifname. */
static bool _veth(br_nl *nl, const br_conf *c, int br_idx, const char *ifname, int ns_fd, added *a,
                  cnip_error *e)
{
    ts_err err = {{0}};
    for (int attempt = 0; attempt < 4; attempt++) {
        uint32_t r = 0;
        if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
            r ^= (uint32_t)getpid() * 2654435761u;
        snprintf(a->host, sizeof(a->host), "veth%08x", r);
        bool eexist = false;
        if (br_nl_veth_create(nl, a->host, ifname, ns_fd, br_idx, c->mtu, &eexist, &err))
            return true;
        if (!eexist) break;
        int there = 0; /* the name is free here: it is the one in the netns */
        if (br_nl_link_get(nl, a->host, &there, NULL, 0, &err) && there == 0) {
            cnip_error_set(e, BR_E_NETLINK, "cannot create the veth pair",
                           "%s already exists in the container's network namespace", ifname);
            return false;
        }
    }
    a->host[0] = '\0';
    return _nl_fail(e, "cannot create the veth pair", &err);
}

/* Long: the ADD's steps in order, with one undo at the end for whatever they made (the veth pair,
 * the lease). */
static bool _add(const br_conf *c, const char *cid, const char *netns, const char *ifname, added *a,
                 cnip_error *e)
{
    memset(a, 0, sizeof(*a));
    ts_err err = {{0}};
    int ns_fd = open(netns, O_RDONLY | O_CLOEXEC);
    if (ns_fd < 0) {
        cnip_error_set(e, CNIP_E_IO, "cannot open the network namespace", "%s: %s", netns,
                       strerror(errno));
        return false;
    }
    br_nl host;
    if (!br_nl_open(&host, &err)) {
        close(ns_fd);
        return _nl_fail(e, "cannot open a netlink socket", &err);
    }
    bool ok = !c->is_gateway || _ip_forward_on(e);
    int br_idx = 0;
    if (ok) {
        if (!br_nl_bridge_ensure(&host, c->bridge, c->mtu, c->port_isolation, c->no_netfilter,
                                 &br_idx, &err))
            ok = _nl_fail(e, "cannot set up the bridge", &err);
    }
    if (ok) ok = _vxlan(&host, c, br_idx, e);
    if (ok && c->is_gateway && !br_nl_addr_add(&host, br_idx, c->gateway, c->prefix, &err))
        ok = _nl_fail(e, "cannot give the bridge its gateway address", &err);
    if (ok && c->disable_ipv6 && !br_sys_ipv6_off(c->bridge, &err))
        ok = _sys_fail(e, "cannot turn IPv6 off on the bridge", &err);
    if (ok && c->port_isolation && !br_sys_proxy_arp(c->bridge, &err))
        ok = _sys_fail(e, "cannot turn proxy ARP on on the bridge", &err);
    br_ipam store;
    bool leased = false;
    if (ok && c->static_ipam) {
        a->ip = c->range_start;
    } else if (ok && br_ipam_open(&store, c, e)) {
        ok = br_ipam_alloc(&store, c, cid, ifname, &a->ip, &leased, e);
        br_ipam_close(&store);
    } else {
        ok = false;
    }
    if (ok) ok = _veth(&host, c, br_idx, ifname, ns_fd, a, e);
    int hidx = 0;
    if (ok) {
        if (!br_nl_link_get(&host, a->host, &hidx, NULL, 0, &err) || hidx == 0)
            ok = _nl_fail(e, "the host end of the veth pair is missing", &err);
        else if (c->disable_ipv6 && !br_sys_ipv6_off(a->host, &err))
            ok = _sys_fail(e, "cannot turn IPv6 off on the host end of the veth pair", &err);
        else if ((c->hairpin || c->port_isolation) &&
                 !br_nl_port_set(&host, hidx, c->hairpin, c->port_isolation, &err))
            ok = _nl_fail(e, "cannot set up the bridge port", &err);
        else if (!br_nl_link_up(&host, hidx, &err))
            ok = _nl_fail(e, "cannot bring the host end of the veth pair up", &err);
    }
    if (ok) {
        br_mac(c->bridge, a->mac_bridge);
        br_mac(a->host, a->mac_host);
        ok = _enter(ns_fd, netns, e);
    }
    if (ok && c->disable_ipv6 && !br_sys_ipv6_off(ifname, &err))
        ok = _sys_fail(e, "cannot turn IPv6 off on the container's interface", &err);
    br_nl cont = {.fd = -1};
    if (ok && !br_nl_open(&cont, &err)) ok = _nl_fail(e, "cannot open a netlink socket", &err);
    int idx = 0;
    if (ok) {
        if (!br_nl_link_get(&cont, ifname, &idx, NULL, 0, &err) || idx == 0)
            ok = _nl_fail(e, "the container's interface is missing", &err);
    }
    if (ok && !br_nl_addr_add(&cont, idx, a->ip, c->prefix, &err))
        ok = _nl_fail(e, "cannot give the container its address", &err);
    if (ok && !br_nl_link_up(&cont, idx, &err))
        ok = _nl_fail(e, "cannot bring the container's interface up", &err);
    bool have_default = false;
    for (int i = 0; ok && i < c->n_routes; i++) {
        const br_route *r = &c->routes[i];
        have_default |= r->prefix == 0;
        if (!br_nl_route_add(&cont, idx, r->dst, r->prefix, r->gw.s_addr ? r->gw : c->gateway,
                             &err))
            ok = _nl_fail(e, "cannot add a route", &err);
    }
    if (ok && c->default_route && !have_default) {
        struct in_addr any = {0};
        if (!br_nl_route_add(&cont, idx, any, 0, c->gateway, &err))
            ok = _nl_fail(e, "cannot add the default route", &err);
    }
    if (ok) br_mac(ifname, a->mac_cont);
    br_nl_close(&cont);
    /* the host's side of isolation, through the host's socket: the only
     * source MAC the port accepts, and the address's MAC fixed for good */
    if (ok && c->port_isolation) {
        unsigned char mac[6];
        if (!br_mac_parse(a->mac_cont, mac)) {
            cnip_error_set(e, BR_E_NETLINK, "cannot read the container's MAC address", "%s: '%s'",
                           ifname, a->mac_cont);
            ok = false;
        } else if (!br_nl_fdb_static(&host, hidx, mac, &err)) {
            ok = _nl_fail(e, "cannot lock the bridge port to the container's MAC", &err);
        } else if (!br_nl_neigh_permanent(&host, br_idx, a->ip, mac, &err)) {
            ok = _nl_fail(e, "cannot add the container's neighbour entry", &err);
        }
    }
    if (!ok) { /* undo: the pair (from the host end) and a lease this ADD took */
        if (a->host[0] && !br_nl_link_del(&host, a->host, &err)) { /* best effort */
        }
        if (leased && br_ipam_open(&store, c, e)) {
            cnip_error keep = *e;
            (void)br_ipam_release(&store, cid, ifname);
            br_ipam_close(&store);
            *e = keep;
        }
    }
    br_nl_close(&host);
    close(ns_fd);
    return ok;
}

static void _print_result(const br_conf *c, const char *netns, const char *ifname, const added *a)
{
    bool old = strncmp(c->cni_version, "0.", 2) == 0;
    char ip[INET_ADDRSTRLEN], gw[INET_ADDRSTRLEN], cidr[INET_ADDRSTRLEN + 4];
    inet_ntop(AF_INET, &a->ip, ip, sizeof(ip));
    inet_ntop(AF_INET, &c->gateway, gw, sizeof(gw));
    snprintf(cidr, sizeof(cidr), "%s/%d", ip, c->prefix);
    json_t *ips = json_pack("{s:s, s:i}", "address", cidr, "interface", 2);
    if (c->gateway.s_addr) json_object_set_new(ips, "gateway", json_string(gw));
    if (old) json_object_set_new(ips, "version", json_string("4"));
    json_t *routes = json_array();
    for (int i = 0; i < c->n_routes; i++) {
        char d[INET_ADDRSTRLEN], dst[INET_ADDRSTRLEN + 4];
        inet_ntop(AF_INET, &c->routes[i].dst, d, sizeof(d));
        snprintf(dst, sizeof(dst), "%s/%d", d, c->routes[i].prefix);
        json_t *r = json_pack("{s:s}", "dst", dst);
        if (c->routes[i].gw.s_addr) {
            char g[INET_ADDRSTRLEN];
            inet_ntop(AF_INET, &c->routes[i].gw, g, sizeof(g));
            json_object_set_new(r, "gw", json_string(g));
        }
        json_array_append_new(routes, r);
    }
    json_t *j = json_pack("{s:s, s:[{s:s, s:s}, {s:s, s:s}, {s:s, s:s, s:s}], s:[o], s:o, s:{}}",
                          "cniVersion", c->cni_version, "interfaces", "name", c->bridge, "mac",
                          a->mac_bridge, "name", a->host, "mac", a->mac_host, "name", ifname, "mac",
                          a->mac_cont, "sandbox", netns, "ips", ips, "routes", routes, "dns");
    json_dumpf(j, stdout, JSON_COMPACT);
    fputc('\n', stdout);
    json_decref(j);
}

static bool _del(const br_conf *c, const char *cid, const char *netns, const char *ifname,
                 cnip_error *e)
{
    ts_err err = {{0}};
    if (c->has_ipam && !c->static_ipam) {
        br_ipam store;
        if (!br_ipam_open(&store, c, e)) return false;
        struct in_addr ip;
        /* the neighbour entry goes while the lease is still held, so it is
         * never one an ADD given the address meanwhile has just made */
        if (c->port_isolation && br_ipam_find(&store, cid, ifname, &ip)) {
            br_nl host;
            bool gone = br_nl_open(&host, &err);
            if (gone) {
                int br_idx = 0;
                gone = br_nl_link_get(&host, c->bridge, &br_idx, NULL, 0, &err) &&
                       (br_idx == 0 || br_nl_neigh_del(&host, br_idx, ip, &err));
                br_nl_close(&host);
            }
            if (!gone) {
                br_ipam_close(&store);
                return _nl_fail(e, "cannot delete the container's neighbour entry", &err);
            }
        }
        (void)br_ipam_release(&store, cid, ifname);
        br_ipam_close(&store);
    }
    /* removeIdleBridge: the host's socket, opened before entering the
     * container's namespace, sees the bridge once the interface is gone */
    int lock = -1;
    br_nl host = {.fd = -1};
    if (c->remove_idle &&
        (!_cluster_lock(c, &lock, e) ||
         (!br_nl_open(&host, &err) && !_nl_fail(e, "cannot open a netlink socket", &err)))) {
        if (lock >= 0) close(lock);
        return false;
    }
    bool ok = true;
    int ns_fd = netns && *netns ? open(netns, O_RDONLY | O_CLOEXEC) : -1;
    if (ns_fd >= 0) { /* else the namespace is gone, and its interfaces with it */
        ok = _enter(ns_fd, netns, e);
        close(ns_fd);
        br_nl cont;
        if (ok && !br_nl_open(&cont, &err)) {
            ok = _nl_fail(e, "cannot open a netlink socket", &err);
        } else if (ok) {
            if (!br_nl_link_del(&cont, ifname, &err))
                ok = _nl_fail(e, "cannot delete the container's interface", &err);
            br_nl_close(&cont);
        }
    }
    if (ok && c->remove_idle) ok = _remove_idle(&host, c, e);
    br_nl_close(&host);
    if (lock >= 0) close(lock);
    return ok;
}

static bool _check(const br_conf *c, const char *cid, const char *netns, const char *ifname,
                   cnip_error *e)
{
    br_ipam store;
    struct in_addr ip;
    bool leased = c->static_ipam; /* a static address has no lease */
    if (!leased) {
        if (!br_ipam_open(&store, c, e)) return false;
        leased = br_ipam_find(&store, cid, ifname, &ip);
        br_ipam_close(&store);
    }
    if (!leased) {
        cnip_error_set(e, BR_E_MISSING, "no address leased", "network %s has no lease for %s/%s",
                       c->name, cid, ifname);
        return false;
    }
    int ns_fd = open(netns, O_RDONLY | O_CLOEXEC);
    if (ns_fd < 0) {
        cnip_error_set(e, CNIP_E_IO, "cannot open the network namespace", "%s: %s", netns,
                       strerror(errno));
        return false;
    }
    bool ok = _enter(ns_fd, netns, e);
    close(ns_fd);
    ts_err err = {{0}};
    br_nl cont;
    if (ok && !br_nl_open(&cont, &err)) return _nl_fail(e, "cannot open a netlink socket", &err);
    if (ok) {
        char kind[32];
        int idx = 0;
        if (!br_nl_link_get(&cont, ifname, &idx, kind, sizeof(kind), &err))
            ok = _nl_fail(e, "cannot read the container's interface", &err);
        else if (idx == 0 || strcmp(kind, "veth") != 0) {
            cnip_error_set(e, BR_E_MISSING, "the container's interface is missing", "%s in %s: %s",
                           ifname, netns, idx ? "not a veth" : "no such link");
            ok = false;
        }
        br_nl_close(&cont);
    }
    return ok;
}

/* The plugin's state: the configuration, and what ADD made. */
typedef struct bridge {
    br_conf c;
    added a;
} bridge;

static bool _parse_cb(void *self, const cnip_request *r, const char *text, size_t len,
                      cnip_error *e)
{
    bridge *b = self;
    if (strlen(r->ifname) >= IF_NAMESIZE || strchr(r->ifname, '/') ||
        strpbrk(r->ifname, " \t\n:")) {
        cnip_error_set(e, CNIP_E_ENV, "invalid environment",
                       "CNI_IFNAME %.40s: not an interface name", r->ifname);
        return false;
    }
    return br_conf_parse(text, len, r->cmd, &b->c, e);
}

static bool _add_cb(void *self, const cnip_request *r, cnip_error *e)
{
    bridge *b = self;
    int lock;
    if (!_cluster_lock(&b->c, &lock, e)) return false;
    bool ok = _add(&b->c, r->cid, r->netns, r->ifname, &b->a, e);
    if (lock >= 0) close(lock);
    return ok;
}

static bool _del_cb(void *self, const cnip_request *r, cnip_error *e)
{
    bridge *b = self;
    return _del(&b->c, r->cid, r->netns, r->ifname, e);
}

static bool _check_cb(void *self, const cnip_request *r, cnip_error *e)
{
    bridge *b = self;
    return _check(&b->c, r->cid, r->netns, r->ifname, e);
}

static void _print_cb(void *self, const cnip_request *r)
{
    bridge *b = self;
    _print_result(&b->c, r->netns, r->ifname, &b->a);
}

static const char *_version_cb(void *self)
{
    bridge *b = self;
    return b->c.cni_version;
}

int main(void)
{
    bridge b;
    memset(&b, 0, sizeof(b));
    cnip_plugin p = {.self = &b,
                     .parse = _parse_cb,
                     .add = _add_cb,
                     .del = _del_cb,
                     .check = _check_cb,
                     .print_result = _print_cb,
                     .version = _version_cb};
    return cnip_main(&p);
}
