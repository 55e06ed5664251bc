/* cni_cluster.c: a cluster session's network on this node (cni_cluster.h). */
#include "services/agent/cni_cluster.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "libcommon/log.h"
#include "libcommon/proc.h"

#define VXLAN_OVERHEAD 50

static bool _cidr(const char *text, uint32_t *addr, int *prefix)
{
    char a[INET_ADDRSTRLEN];
    const char *slash = text ? strchr(text, '/') : NULL;
    if (!slash || (size_t)(slash - text) >= sizeof(a)) return false;
    memcpy(a, text, (size_t)(slash - text));
    a[slash - text] = '\0';
    struct in_addr in;
    char *end = NULL;
    long p = strtol(slash + 1, &end, 10);
    if (inet_pton(AF_INET, a, &in) != 1 || end == slash + 1 || *end || p < 0 || p > 32)
        return false;
    *addr = ntohl(in.s_addr);
    *prefix = (int)p;
    return true;
}

static bool _overlap(uint32_t a, int pa, uint32_t b, int pb)
{
    int p = pa < pb ? pa : pb;
    uint32_t mask = p ? 0xffffffffu << (32 - p) : 0;
    return (a & mask) == (b & mask);
}

/* The MTU of the interface holding address local, less VXLAN's overhead; 0
 * when none holds it. */
static int _mtu(const char *local)
{
    struct in_addr want;
    if (!local || inet_pton(AF_INET, local, &want) != 1) return 0;
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0) return 0;
    int mtu = 0;
    for (struct ifaddrs *i = ifs; i && !mtu; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
            ((const struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr != want.s_addr)
            continue;
        int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        struct ifreq ifr;
        memset(&ifr, 0, sizeof(ifr));
        snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", i->ifa_name);
        if (s >= 0 && ioctl(s, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > VXLAN_OVERHEAD + 68)
            mtu = ifr.ifr_mtu - VXLAN_OVERHEAD;
        if (s >= 0) close(s);
    }
    freeifaddrs(ifs);
    return mtu;
}

bool cni_cluster_conf(const cni_conf *c, const kernel_cluster *k, char **conf, ts_err *err)
{
    *conf = NULL;
    uint32_t addr, net;
    int prefix, net_prefix;
    if (!c->cluster_bridge) {
        ts_err_set(err, "cluster network: tessera-bridge is not installed beside the agent");
        return false;
    }
    if (k->vni < 1 || k->vni > 0xffffff || !_cidr(k->address, &addr, &prefix) || prefix < 8 ||
        prefix > 30) {
        ts_err_set(err,
                   "cluster network: id %u, address '%s': want an id of 1 to 16777215 and "
                   "a.b.c.d/8 to /30",
                   k->vni, k->address ? k->address : "");
        return false;
    }
    if (c->subnet && _cidr(c->subnet, &net, &net_prefix) &&
        _overlap(addr, prefix, net, net_prefix)) {
        ts_err_set(err,
                   "cluster network %s overlaps this agent's agent.cni_subnet %s (set "
                   "registry.cluster_subnet apart from every agent's)",
                   k->address, c->subnet);
        return false;
    }
    const char *nw = c->network ? c->network : "";
    uint32_t h = (uint32_t)ts_fnv1a(TS_FNV_OFFSET, nw, strlen(nw));
    char bridge[IF_NAMESIZE], vxlan[IF_NAMESIZE];
    snprintf(bridge, sizeof(bridge), "tc%06x%06x", k->vni & 0xffffff, h & 0xffffff);
    snprintf(vxlan, sizeof(vxlan), "tv%06x%06x", k->vni & 0xffffff, h & 0xffffff);
    bool remote = k->local && *k->local && k->n_remotes > 0;
    int mtu = remote ? _mtu(k->local) : 0;
    char *data = ts_asprintf("%s/networks", c->data_dir);
    json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:b, s:b, s:b, s:b, s:b, s:{s:s, s:[{s:s}], s:s}}",
                          "cniVersion", "1.0.0", "name", bridge, "type", "tessera-bridge", "bridge",
                          bridge, "isGateway", 0, "ipMasq", 0, "disableIPv6", 1, "bridgeNetfilter",
                          0, "removeIdleBridge", 1, "ipam", "type", "static", "addresses",
                          "address", k->address, "dataDir", data);
    free(data);
    if (mtu > 0) json_object_set_new(j, "mtu", json_integer(mtu));
    json_t *remotes = json_array();
    for (int i = 0; remote && i < k->n_remotes; i++)
        json_array_append_new(remotes, json_string(k->remotes[i]));
    /* always named, so that a DEL removes a device an ADD with remotes made */
    json_object_set_new(j, "vxlan",
                        json_pack("{s:s, s:i, s:i, s:s, s:o}", "name", vxlan, "vni", (int)k->vni,
                                  "port", c->vxlan_port > 0 ? c->vxlan_port : 4789, "local",
                                  remote ? k->local : "0.0.0.0", "remotes", remotes));
    *conf = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return true;
}

bool cni_cluster_add(const cni_conf *c, const char *kernel_id, const char *netns, const char *conf,
                     char **result, ts_err *err)
{
    *result = NULL;
    json_t *j = json_loads(conf, 0, NULL);
    bool ok = j && cni_plugin_run(c, c->cluster_bridge, "ADD", kernel_id, netns, CNI_CLUSTER_IFNAME,
                                  j, result, err);
    if (!j) ts_err_set(err, "cluster network: the configuration is not JSON");
    json_decref(j);
    if (ok) TLOG_DEBUG("cluster network attached", "kernel=%s", kernel_id);
    return ok;
}

bool cni_cluster_del(const cni_conf *c, const char *kernel_id, const char *netns, const char *conf,
                     const char *prev_result, ts_err *err)
{
    json_t *j = json_loads(conf, 0, NULL);
    if (!j) {
        ts_err_set(err, "cluster network: the kernel's configuration is not JSON");
        return false;
    }
    json_t *p = prev_result ? json_loads(prev_result, 0, NULL) : NULL;
    if (p) json_object_set_new(j, "prevResult", p);
    const char *plugin = c->cluster_bridge ? c->cluster_bridge : c->bridge;
    bool ok = cni_plugin_run(c, plugin, "DEL", kernel_id, netns, CNI_CLUSTER_IFNAME, j, NULL, err);
    json_decref(j);
    return ok;
}
