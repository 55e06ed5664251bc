/* br_nl.c: rtnetlink requests (br_nl.h). */
#include "services/cni-bridge/br_nl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_arp.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#define MSG_CAP 4096

typedef struct msg {
    union {
        struct nlmsghdr h;
        char buf[MSG_CAP];
    };
} msg;

static void *_tail(msg *m)
{
    return m->buf + NLMSG_ALIGN(m->h.nlmsg_len);
}

static void *_put(msg *m, const void *data, size_t len)
{
    void *p = _tail(m);
    if (data)
        memcpy(p, data, len);
    else
        memset(p, 0, len);
    m->h.nlmsg_len = (uint32_t)(NLMSG_ALIGN(m->h.nlmsg_len) + len);
    return p;
}

static struct rtattr *_attr(msg *m, unsigned short type, const void *data, size_t len)
{
    struct rtattr *a = _tail(m);
    a->rta_type = type;
    a->rta_len = (unsigned short)RTA_LENGTH(len);
    if (len) memcpy(RTA_DATA(a), data, len);
    m->h.nlmsg_len = (uint32_t)(NLMSG_ALIGN(m->h.nlmsg_len) + RTA_ALIGN(a->rta_len));
    return a;
}

static struct rtattr *_nest(msg *m, unsigned short type)
{
    return _attr(m, type, NULL, 0);
}

static void _nest_end(msg *m, struct rtattr *a)
{
    a->rta_len = (unsigned short)((char *)_tail(m) - (char *)a);
}

static void _start(msg *m, unsigned short type, unsigned short flags)
{
    memset(m->buf, 0, sizeof(struct nlmsghdr) + 64);
    m->h.nlmsg_len = NLMSG_LENGTH(0);
    m->h.nlmsg_type = type;
    m->h.nlmsg_flags = (unsigned short)(NLM_F_REQUEST | flags);
}

bool br_nl_open(br_nl *n, ts_err *err)
{
    n->seq = 0;
    n->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (n->fd < 0) {
        ts_err_set(err, "netlink socket: %s", strerror(errno));
        return false;
    }
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
    if (bind(n->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        ts_err_set(err, "netlink bind: %s", strerror(errno));
        close(n->fd);
        n->fd = -1;
        return false;
    }
    return true;
}

void br_nl_close(br_nl *n)
{
    if (n->fd >= 0) close(n->fd);
    n->fd = -1;
}

/* Send m; wait for its answer. 0 for an ack, the kernel's errno for an error;
 * a data answer (a GET) is copied into reply when it is given. */
static int _talk(br_nl *n, msg *m, msg *reply)
{
    m->h.nlmsg_seq = ++n->seq;
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
    ssize_t k;
    do {
        k = sendto(n->fd, m->buf, m->h.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa));
    } while (k < 0 && errno == EINTR);
    if (k < 0) return errno;
    char buf[16384];
    for (;;) {
        k = recv(n->fd, buf, sizeof(buf), 0);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return errno;
        if (k == 0) return EPIPE;
        for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (unsigned)k);
             h = NLMSG_NEXT(h, k)) {
            if (h->nlmsg_seq != n->seq) continue;
            if (h->nlmsg_type == NLMSG_ERROR) {
                const struct nlmsgerr *e = NLMSG_DATA(h);
                return e->error < 0 ? -e->error : 0;
            }
            if (reply && h->nlmsg_len <= sizeof(reply->buf)) {
                memcpy(reply->buf, h, h->nlmsg_len);
                return 0;
            }
        }
    }
}

bool br_nl_link_get(br_nl *n, const char *name, int *index, char *kind, size_t kind_size,
                    ts_err *err)
{
    msg m, r;
    *index = 0;
    _start(&m, RTM_GETLINK, 0);
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
    _put(&m, &ifi, sizeof(ifi));
    _attr(&m, IFLA_IFNAME, name, strlen(name) + 1);
    uint32_t mask = RTEXT_FILTER_SKIP_STATS;
    _attr(&m, IFLA_EXT_MASK, &mask, sizeof(mask));
    memset(r.buf, 0, sizeof(struct nlmsghdr));
    int rc = _talk(n, &m, &r);
    if (rc == ENODEV) return true;
    if (rc != 0 || r.h.nlmsg_type != RTM_NEWLINK) {
        ts_err_set(err, "get link %s: %s", name, rc ? strerror(rc) : "no answer");
        return false;
    }
    const struct ifinfomsg *got = NLMSG_DATA(&r.h);
    if (kind && kind_size) kind[0] = '\0';
    int len = (int)IFLA_PAYLOAD(&r.h);
    for (struct rtattr *a = IFLA_RTA(got); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
        if (a->rta_type != IFLA_LINKINFO || !kind) continue;
        int l2 = (int)RTA_PAYLOAD(a);
        for (struct rtattr *b = RTA_DATA(a); RTA_OK(b, l2); b = RTA_NEXT(b, l2))
            if (b->rta_type == IFLA_INFO_KIND)
                snprintf(kind, kind_size, "%.*s", (int)RTA_PAYLOAD(b), (char *)RTA_DATA(b));
    }
    *index = got->ifi_index;
    return true;
}

bool br_nl_link_up(br_nl *n, int ifindex, ts_err *err)
{
    msg m;
    _start(&m, RTM_NEWLINK, NLM_F_ACK);
    struct ifinfomsg ifi = {
        .ifi_family = AF_UNSPEC, .ifi_index = ifindex, .ifi_flags = IFF_UP, .ifi_change = IFF_UP};
    _put(&m, &ifi, sizeof(ifi));
    int rc = _talk(n, &m, NULL);
    if (rc == 0) return true;
    ts_err_set(err, "set link %d up: %s", ifindex, strerror(rc));
    return false;
}

/* /sys/class/net/<name>/addr_assign_type is NET_ADDR_SET (3): the MAC was
 * given, and a bridge keeps it. */
static bool _mac_fixed(const char *name)
{
    char path[96], buf[8] = "";
    snprintf(path, sizeof(path), "/sys/class/net/%s/addr_assign_type", name);
    FILE *f = fopen(path, "re");
    if (!f) return false;
    bool fixed = fgets(buf, sizeof(buf), f) && buf[0] == '3';
    fclose(f);
    return fixed;
}

/* Random, unicast, locally administered. */
static void _random_mac(unsigned char mac[6])
{
    if (getrandom(mac, 6, 0) != 6)
        for (int i = 0; i < 6; i++)
            mac[i] = (unsigned char)(getpid() >> (i % 3 * 8));
    mac[0] = (unsigned char)((mac[0] & 0xfe) | 0x02);
}

static bool _set_mac(br_nl *n, int ifindex, const unsigned char mac[6], ts_err *err)
{
    msg m;
    _start(&m, RTM_NEWLINK, NLM_F_ACK);
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = ifindex};
    _put(&m, &ifi, sizeof(ifi));
    _attr(&m, IFLA_ADDRESS, mac, 6);
    int rc = _talk(n, &m, NULL);
    if (rc == 0) return true;
    ts_err_set(err, "set the MAC of link %d: %s", ifindex, strerror(rc));
    return false;
}

bool br_nl_bridge_ensure(br_nl *n, const char *name, int mtu, bool fixed_mac, bool no_netfilter,
                         int *index, ts_err *err)
{
    char kind[32];
    int idx = 0;
    *index = 0;
    if (!br_nl_link_get(n, name, &idx, kind, sizeof(kind), err)) return false;
    if (idx == 0) {
        msg m;
        _start(&m, RTM_NEWLINK, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
        struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
        _put(&m, &ifi, sizeof(ifi));
        _attr(&m, IFLA_IFNAME, name, strlen(name) + 1);
        if (mtu > 0) _attr(&m, IFLA_MTU, &mtu, sizeof(mtu));
        if (fixed_mac) {
            unsigned char mac[6];
            _random_mac(mac);
            _attr(&m, IFLA_ADDRESS, mac, sizeof(mac));
        }
        struct rtattr *li = _nest(&m, IFLA_LINKINFO);
        _attr(&m, IFLA_INFO_KIND, "bridge", 6);
        if (no_netfilter) {
            struct rtattr *data = _nest(&m, IFLA_INFO_DATA);
            unsigned char off = 0;
            _attr(&m, IFLA_BR_NF_CALL_IPTABLES, &off, sizeof(off));
            _attr(&m, IFLA_BR_NF_CALL_IP6TABLES, &off, sizeof(off));
            _attr(&m, IFLA_BR_NF_CALL_ARPTABLES, &off, sizeof(off));
            _nest_end(&m, data);
        }
        _nest_end(&m, li);
        int rc = _talk(n, &m, NULL);
        if (rc != 0 && rc != EEXIST) { /* EEXIST: another ADD made it meanwhile */
            ts_err_set(err, "create bridge %s: %s", name, strerror(rc));
            return false;
        }
        if (!br_nl_link_get(n, name, &idx, kind, sizeof(kind), err)) return false;
        if (idx == 0) {
            ts_err_set(err, "bridge %s: gone right after it was created", name);
            return false;
        }
    }
    if (strcmp(kind, "bridge") != 0) {
        ts_err_set(err, "link %s exists and is not a bridge (%s)", name,
                   kind[0] ? kind : "no kind");
        return false;
    }
    if (fixed_mac && !_mac_fixed(name)) {
        /* made elsewhere: its MAC as it is, kept; a bridge without ports
         * has none (00:00:00:00:00:00): a new one */
        char text[18];
        unsigned char mac[6];
        br_mac(name, text);
        if (!br_mac_parse(text, mac) || (mac[0] & 1) ||
            !(mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]))
            _random_mac(mac);
        if (!_set_mac(n, idx, mac, err)) return false;
    }
    if (!br_nl_link_up(n, idx, err)) return false;
    *index = idx;
    return true;
}

bool br_nl_addr_add(br_nl *n, int ifindex, struct in_addr a, int prefix, ts_err *err)
{
    msg m;
    _start(&m, RTM_NEWADDR, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
    struct ifaddrmsg ifa = {.ifa_family = AF_INET,
                            .ifa_prefixlen = (unsigned char)prefix,
                            .ifa_scope = RT_SCOPE_UNIVERSE,
                            .ifa_index = (unsigned)ifindex};
    _put(&m, &ifa, sizeof(ifa));
    _attr(&m, IFA_LOCAL, &a, sizeof(a));
    _attr(&m, IFA_ADDRESS, &a, sizeof(a));
    if (prefix < 31) {
        struct in_addr b = {.s_addr =
                                a.s_addr | htonl(prefix ? ~(0xffffffffu << (32 - prefix)) : ~0u)};
        _attr(&m, IFA_BROADCAST, &b, sizeof(b));
    }
    int rc = _talk(n, &m, NULL);
    if (rc == 0 || rc == EEXIST) return true;
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &a, ip, sizeof(ip));
    ts_err_set(err, "add address %s/%d to link %d: %s", ip, prefix, ifindex, strerror(rc));
    return false;
}

bool br_nl_veth_create(br_nl *n, const char *host, const char *peer, int peer_ns_fd, int master,
                       int mtu, bool *eexist, ts_err *err)
{
    msg m;
    *eexist = false;
    _start(&m, RTM_NEWLINK, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
    /* created down: veth_open() refuses (ENOTCONN) while the pair is half made */
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
    _put(&m, &ifi, sizeof(ifi));
    _attr(&m, IFLA_IFNAME, host, strlen(host) + 1);
    if (mtu > 0) _attr(&m, IFLA_MTU, &mtu, sizeof(mtu));
    if (master > 0) _attr(&m, IFLA_MASTER, &master, sizeof(master));
    struct rtattr *li = _nest(&m, IFLA_LINKINFO);
    _attr(&m, IFLA_INFO_KIND, "veth", 4);
    struct rtattr *data = _nest(&m, IFLA_INFO_DATA);
    struct rtattr *pe = _nest(&m, VETH_INFO_PEER);
    struct ifinfomsg pifi = {.ifi_family = AF_UNSPEC};
    _put(&m, &pifi, sizeof(pifi));
    _attr(&m, IFLA_IFNAME, peer, strlen(peer) + 1);
    _attr(&m, IFLA_NET_NS_FD, &peer_ns_fd, sizeof(peer_ns_fd));
    if (mtu > 0) _attr(&m, IFLA_MTU, &mtu, sizeof(mtu));
    _nest_end(&m, pe);
    _nest_end(&m, data);
    _nest_end(&m, li);
    int rc = _talk(n, &m, NULL);
    if (rc == 0) return true;
    *eexist = rc == EEXIST;
    ts_err_set(err, "create veth pair %s / %s: %s", host, peer, strerror(rc));
    return false;
}

bool br_nl_port_set(br_nl *n, int ifindex, bool hairpin, bool isolate, ts_err *err)
{
    msg m;
    _start(&m, RTM_SETLINK, NLM_F_ACK);
    struct ifinfomsg ifi = {.ifi_family = AF_BRIDGE, .ifi_index = ifindex};
    _put(&m, &ifi, sizeof(ifi));
    struct rtattr *pi = _nest(&m, IFLA_PROTINFO | NLA_F_NESTED);
    unsigned char v = hairpin ? 1 : 0;
    _attr(&m, IFLA_BRPORT_MODE, &v, sizeof(v));
    if (isolate) {
        unsigned char on = 1, off = 0;
        _attr(&m, IFLA_BRPORT_ISOLATED, &on, sizeof(on));
        _attr(&m, IFLA_BRPORT_LOCKED, &on, sizeof(on));
        _attr(&m, IFLA_BRPORT_LEARNING, &off, sizeof(off));
    }
    _nest_end(&m, pi);
    int rc = _talk(n, &m, NULL);
    if (rc == 0) return true;
    ts_err_set(err, "set bridge port settings of link %d (hairpin %s%s): %s", ifindex,
               hairpin ? "on" : "off", isolate ? ", isolated, locked, no learning" : "",
               strerror(rc));
    return false;
}

/* RTM_NEWNEIGH / RTM_DELNEIGH: family, ifindex, state, flags, dst (AF_INET
 * only), lladdr (NULL: none). */
static int _neigh(br_nl *n, unsigned short type, unsigned char family, int ifindex,
                  unsigned short state, unsigned char flags, const struct in_addr *dst,
                  const unsigned char *mac)
{
    msg m;
    _start(&m, type,
           (unsigned short)(NLM_F_ACK | (type == RTM_NEWNEIGH ? NLM_F_CREATE | NLM_F_REPLACE : 0)));
    struct ndmsg nd = {
        .ndm_family = family, .ndm_ifindex = ifindex, .ndm_state = state, .ndm_flags = flags};
    _put(&m, &nd, sizeof(nd));
    if (dst) _attr(&m, NDA_DST, dst, sizeof(*dst));
    if (mac) _attr(&m, NDA_LLADDR, mac, 6);
    return _talk(n, &m, NULL);
}

bool br_nl_fdb_static(br_nl *n, int ifindex, const unsigned char mac[6], ts_err *err)
{
    /* NUD_NOARP is "static"; NUD_PERMANENT would make it a local (the
     * bridge's own) address, which a locked port refuses */
    int rc = _neigh(n, RTM_NEWNEIGH, AF_BRIDGE, ifindex, NUD_NOARP, NTF_MASTER, NULL, mac);
    if (rc == 0) return true;
    ts_err_set(err, "add static FDB entry %02x:%02x:%02x:%02x:%02x:%02x on link %d: %s", mac[0],
               mac[1], mac[2], mac[3], mac[4], mac[5], ifindex, strerror(rc));
    return false;
}

bool br_nl_neigh_permanent(br_nl *n, int ifindex, struct in_addr a, const unsigned char mac[6],
                           ts_err *err)
{
    int rc = _neigh(n, RTM_NEWNEIGH, AF_INET, ifindex, NUD_PERMANENT, 0, &a, mac);
    if (rc == 0) return true;
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &a, ip, sizeof(ip));
    ts_err_set(err, "add permanent neighbour %s on link %d: %s", ip, ifindex, strerror(rc));
    return false;
}

bool br_nl_neigh_del(br_nl *n, int ifindex, struct in_addr a, ts_err *err)
{
    int rc = _neigh(n, RTM_DELNEIGH, AF_INET, ifindex, 0, 0, &a, NULL);
    if (rc == 0 || rc == ENOENT) return true;
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &a, ip, sizeof(ip));
    ts_err_set(err, "delete neighbour %s on link %d: %s", ip, ifindex, strerror(rc));
    return false;
}

bool br_nl_route_add(br_nl *n, int ifindex, struct in_addr dst, int prefix, struct in_addr gw,
                     ts_err *err)
{
    msg m;
    _start(&m, RTM_NEWROUTE, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
    struct rtmsg rt = {.rtm_family = AF_INET,
                       .rtm_dst_len = (unsigned char)prefix,
                       .rtm_table = RT_TABLE_MAIN,
                       .rtm_protocol = RTPROT_BOOT,
                       .rtm_scope = gw.s_addr ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK,
                       .rtm_type = RTN_UNICAST};
    _put(&m, &rt, sizeof(rt));
    if (prefix > 0) _attr(&m, RTA_DST, &dst, sizeof(dst));
    if (gw.s_addr) _attr(&m, RTA_GATEWAY, &gw, sizeof(gw));
    _attr(&m, RTA_OIF, &ifindex, sizeof(ifindex));
    int rc = _talk(n, &m, NULL);
    if (rc == 0 || rc == EEXIST) return true;
    char d[INET_ADDRSTRLEN], g[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &dst, d, sizeof(d));
    inet_ntop(AF_INET, &gw, g, sizeof(g));
    ts_err_set(err, "add route %s/%d via %s: %s", d, prefix, g, strerror(rc));
    return false;
}

bool br_nl_vxlan_ensure(br_nl *n, const br_vxlan_spec *x, int master, int *index, ts_err *err)
{
    char kind[32];
    int idx = 0;
    *index = 0;
    if (!br_nl_link_get(n, x->name, &idx, kind, sizeof(kind), err)) return false;
    if (idx == 0) {
        msg m;
        _start(&m, RTM_NEWLINK, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
        struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
        _put(&m, &ifi, sizeof(ifi));
        _attr(&m, IFLA_IFNAME, x->name, strlen(x->name) + 1);
        if (x->mtu > 0) _attr(&m, IFLA_MTU, &x->mtu, sizeof(x->mtu));
        struct rtattr *li = _nest(&m, IFLA_LINKINFO);
        _attr(&m, IFLA_INFO_KIND, "vxlan", 5);
        struct rtattr *data = _nest(&m, IFLA_INFO_DATA);
        uint32_t vni = x->vni;
        uint16_t port = htons((uint16_t)x->port);
        unsigned char learning = 1;
        _attr(&m, IFLA_VXLAN_ID, &vni, sizeof(vni));
        _attr(&m, IFLA_VXLAN_LOCAL, &x->local, sizeof(x->local));
        _attr(&m, IFLA_VXLAN_PORT, &port, sizeof(port));
        _attr(&m, IFLA_VXLAN_LEARNING, &learning, sizeof(learning));
        _nest_end(&m, data);
        _nest_end(&m, li);
        int rc = _talk(n, &m, NULL);
        if (rc != 0 && rc != EEXIST) {
            ts_err_set(err, "create VXLAN device %s (id %u, port %d): %s", x->name, x->vni, x->port,
                       strerror(rc));
            return false;
        }
        if (!br_nl_link_get(n, x->name, &idx, kind, sizeof(kind), err)) return false;
        if (idx == 0) {
            ts_err_set(err, "VXLAN device %s: gone right after it was created", x->name);
            return false;
        }
    }
    if (strcmp(kind, "vxlan") != 0) {
        ts_err_set(err, "link %s exists and is not a VXLAN device (%s)", x->name,
                   kind[0] ? kind : "no kind");
        return false;
    }
    msg m;
    _start(&m, RTM_NEWLINK, NLM_F_ACK);
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = idx};
    _put(&m, &ifi, sizeof(ifi));
    _attr(&m, IFLA_MASTER, &master, sizeof(master));
    int rc = _talk(n, &m, NULL);
    if (rc != 0) {
        ts_err_set(err, "attach VXLAN device %s to the bridge: %s", x->name, strerror(rc));
        return false;
    }
    if (!br_nl_link_up(n, idx, err)) return false;
    *index = idx;
    return true;
}

bool br_nl_fdb_flood(br_nl *n, int ifindex, struct in_addr remote, ts_err *err)
{
    msg m;
    _start(&m, RTM_NEWNEIGH, NLM_F_ACK | NLM_F_CREATE | NLM_F_APPEND);
    struct ndmsg nd = {.ndm_family = AF_BRIDGE,
                       .ndm_ifindex = ifindex,
                       .ndm_state = NUD_PERMANENT | NUD_NOARP,
                       .ndm_flags = NTF_SELF};
    _put(&m, &nd, sizeof(nd));
    static const unsigned char zero[6] = {0};
    _attr(&m, NDA_LLADDR, zero, sizeof(zero));
    _attr(&m, NDA_DST, &remote, sizeof(remote));
    int rc = _talk(n, &m, NULL);
    if (rc == 0 || rc == EEXIST) return true;
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &remote, ip, sizeof(ip));
    ts_err_set(err, "add the flood entry to %s on link %d: %s", ip, ifindex, strerror(rc));
    return false;
}

bool br_nl_ports(br_nl *n, int master, int except, int *count, ts_err *err)
{
    msg m;
    *count = 0;
    _start(&m, RTM_GETLINK, NLM_F_DUMP);
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
    _put(&m, &ifi, sizeof(ifi));
    uint32_t mask = RTEXT_FILTER_SKIP_STATS;
    _attr(&m, IFLA_EXT_MASK, &mask, sizeof(mask));
    m.h.nlmsg_seq = ++n->seq;
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
    if (sendto(n->fd, m.buf, m.h.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        ts_err_set(err, "list links: %s", strerror(errno));
        return false;
    }
    static char buf[65536];
    for (;;) {
        ssize_t k = recv(n->fd, buf, sizeof(buf), 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            ts_err_set(err, "list links: %s", k < 0 ? strerror(errno) : "no answer");
            return false;
        }
        for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (unsigned)k);
             h = NLMSG_NEXT(h, k)) {
            if (h->nlmsg_seq != n->seq) continue;
            if (h->nlmsg_type == NLMSG_DONE) return true;
            if (h->nlmsg_type == NLMSG_ERROR) {
                const struct nlmsgerr *e = NLMSG_DATA(h);
                ts_err_set(err, "list links: %s", strerror(-e->error));
                return false;
            }
            if (h->nlmsg_type != RTM_NEWLINK) continue;
            const struct ifinfomsg *got = NLMSG_DATA(h);
            int len = (int)IFLA_PAYLOAD(h);
            for (struct rtattr *a = IFLA_RTA(got); RTA_OK(a, len); a = RTA_NEXT(a, len))
                if (a->rta_type == IFLA_MASTER && *(const int *)RTA_DATA(a) == master &&
                    got->ifi_index != except)
                    (*count)++;
        }
    }
}

bool br_nl_link_del(br_nl *n, const char *name, ts_err *err)
{
    msg m;
    _start(&m, RTM_DELLINK, NLM_F_ACK);
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
    _put(&m, &ifi, sizeof(ifi));
    _attr(&m, IFLA_IFNAME, name, strlen(name) + 1);
    int rc = _talk(n, &m, NULL);
    if (rc == 0 || rc == ENODEV) return true;
    ts_err_set(err, "delete link %s: %s", name, strerror(rc));
    return false;
}

void br_mac(const char *ifname, char out[18])
{
    out[0] = '\0';
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) return;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
    if (ioctl(s, SIOCGIFHWADDR, &ifr) == 0) {
        const unsigned char *h = (const unsigned char *)ifr.ifr_hwaddr.sa_data;
        snprintf(out, 18, "%02x:%02x:%02x:%02x:%02x:%02x", h[0], h[1], h[2], h[3], h[4], h[5]);
    }
    close(s);
}

bool br_mac_parse(const char *text, unsigned char mac[6])
{
    unsigned v[6];
    char end;
    if (sscanf(text, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &end) !=
        6)
        return false;
    for (int i = 0; i < 6; i++)
        mac[i] = (unsigned char)v[i];
    return true;
}
