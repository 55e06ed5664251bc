/* br_conf.c: tessera-bridge's input, checked (br_conf.h). */
#include "services/cni-bridge/br_conf.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_DATA_DIR "/var/lib/cni/networks"

bool br_parse_cidr(const char *s, struct in_addr *addr, int *prefix)
{
    if (!s) return false;
    const char *slash = strchr(s, '/');
    if (!slash || slash == s || (size_t)(slash - s) >= INET_ADDRSTRLEN) return false;
    char ip[INET_ADDRSTRLEN];
    memcpy(ip, s, (size_t)(slash - s));
    ip[slash - s] = '\0';
    if (inet_pton(AF_INET, ip, addr) != 1) return false;
    const char *p = slash + 1;
    if (!*p || strlen(p) > 2) return false;
    int n = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9') return false;
        n = n * 10 + (*p - '0');
    }
    if (n > 32) return false;
    *prefix = n;
    return true;
}

static uint32_t _mask(int prefix)
{
    return prefix == 0 ? 0 : 0xffffffffu << (32 - prefix);
}

static bool _in_subnet(const br_conf *c, struct in_addr a)
{
    uint32_t m = _mask(c->prefix);
    return (ntohl(a.s_addr) & m) == ntohl(c->subnet.s_addr);
}

/* An optional string member: NULL when absent; false (e set) when not a string. */
static bool _opt_str(json_t *o, const char *key, const char *where, const char **out, cnip_error *e)
{
    json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v || json_is_null(v)) return true;
    if (!json_is_string(v)) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config", "%s%s is not a string", where,
                       key);
        return false;
    }
    *out = json_string_value(v);
    return true;
}

static bool _opt_bool(json_t *o, const char *key, bool *out, cnip_error *e)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return true;
    if (!json_is_boolean(v)) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config", "%s is not true or false", key);
        return false;
    }
    *out = json_is_true(v);
    return true;
}

static bool _opt_ip(json_t *o, const char *key, const char *where, struct in_addr *out, bool *set,
                    cnip_error *e)
{
    const char *s;
    *set = false;
    if (!_opt_str(o, key, where, &s, e)) return false;
    if (!s) return true;
    if (inet_pton(AF_INET, s, out) != 1) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config",
                       "%s%s %.60s: not an IPv4 address", where, key, s);
        return false;
    }
    *set = true;
    return true;
}

/* The range: ipam.ranges[0][0] or, the older form, ipam itself. */
static bool _range(json_t *ipam, br_conf *c, cnip_error *e)
{
    json_t *r = ipam;
    const char *where = "ipam.";
    json_t *ranges = json_object_get(ipam, "ranges");
    if (ranges) {
        where = "ipam.ranges[0][0].";
        if (!json_is_array(ranges) || json_array_size(ranges) != 1 ||
            !json_is_array(json_array_get(ranges, 0)) ||
            json_array_size(json_array_get(ranges, 0)) != 1 ||
            !json_is_object(json_array_get(json_array_get(ranges, 0), 0))) {
            cnip_error_set(e, CNIP_E_CONFIG, "invalid network config",
                           "ipam.ranges: want one range set of one range ([[{\"subnet\": ...}]])");
            return false;
        }
        r = json_array_get(json_array_get(ranges, 0), 0);
    }
    const char *subnet;
    if (!_opt_str(r, "subnet", where, &subnet, e)) return false;
    if (!subnet) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config", "%ssubnet is missing", where);
        return false;
    }
    if (!br_parse_cidr(subnet, &c->subnet, &c->prefix)) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config",
                       "%ssubnet %.60s: want an IPv4 network a.b.c.d/len (IPv4 only)", where,
                       subnet);
        return false;
    }
    if (c->prefix < 8 || c->prefix > 30) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config",
                       "%ssubnet %.60s: want a prefix length from 8 to 30", where, subnet);
        return false;
    }
    uint32_t net = ntohl(c->subnet.s_addr) & _mask(c->prefix);
    uint32_t bcast = net | ~_mask(c->prefix);
    c->subnet.s_addr = htonl(net);
    c->range_start.s_addr = htonl(net + 1);
    c->range_end.s_addr = htonl(bcast - 1);
    c->gateway.s_addr = htonl(net + 1);
    struct {
        const char *key;
        struct in_addr *out;
    } opt[] = {
        {"rangeStart", &c->range_start}, {"rangeEnd", &c->range_end}, {"gateway", &c->gateway}};
    for (size_t i = 0; i < TS_ARRAY_LEN(opt); i++) {
        struct in_addr a;
        bool set;
        if (!_opt_ip(r, opt[i].key, where, &a, &set, e)) return false;
        if (!set) continue;
        uint32_t h = ntohl(a.s_addr);
        if (!_in_subnet(c, a) || h == net || h == bcast) {
            cnip_error_set(e, CNIP_E_CONFIG, "invalid network config",
                           "%s%s is not a host address of %.60s", where, opt[i].key, subnet);
            return false;
        }
        *opt[i].out = a;
    }
    if (ntohl(c->range_start.s_addr) > ntohl(c->range_end.s_addr)) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config", "%srangeStart is after rangeEnd",
                       where);
        return false;
    }
    return true;
}

static bool _routes(json_t *ipam, br_conf *c, cnip_error *e)
{
    json_t *routes = json_object_get(ipam, "routes");
    if (!routes || json_is_null(routes)) return true;
    if (!json_is_array(routes) || json_array_size(routes) > BR_MAX_ROUTES) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config",
                       "ipam.routes: want an array of at most %d routes", BR_MAX_ROUTES);
        return false;
    }
    size_t i;
    json_t *r;
    json_array_foreach(routes, i, r)
    {
        char where[32];
        snprintf(where, sizeof(where), "ipam.routes[%zu].", i);
        const char *dst;
        if (!json_is_object(r)) {
            cnip_error_set(e, CNIP_E_CONFIG, "invalid network config",
                           "ipam.routes[%zu] is not "
                           "an object",
                           i);
            return false;
        }
        if (!_opt_str(r, "dst", where, &dst, e)) return false;
        br_route *out = &c->routes[c->n_routes];
        if (!dst || !br_parse_cidr(dst, &out->dst, &out->prefix)) {
            cnip_error_set(e, CNIP_E_CONFIG, "invalid network config",
                           "%sdst: want an IPv4 network a.b.c.d/len", where);
            return false;
        }
        out->dst.s_addr &= htonl(_mask(out->prefix));
        bool set;
        if (!_opt_ip(r, "gw", where, &out->gw, &set, e)) return false;
        if (!set) out->gw.s_addr = 0;
        c->n_routes++;
    }
    return true;
}

/* ipam.type "static": addresses [{address: "a.b.c.d/len"}], one IPv4
 * address; no gateway, no routes of ours. */
static bool _static(json_t *ipam, br_conf *c, cnip_error *e)
{
    json_t *as = json_object_get(ipam, "addresses");
    const char *addr = NULL;
    if (json_is_array(as) && json_array_size(as) == 1 && json_is_object(json_array_get(as, 0)) &&
        !_opt_str(json_array_get(as, 0), "address", "ipam.addresses[0].", &addr, e))
        return false;
    struct in_addr a;
    int prefix;
    if (!addr || !br_parse_cidr(addr, &a, &prefix) || prefix < 8 || prefix > 30) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config",
                       "ipam.addresses: want one address [{\"address\": \"a.b.c.d/len\"}], "
                       "len 8 to 30 (IPv4 only)");
        return false;
    }
    uint32_t net = ntohl(a.s_addr) & _mask(prefix), h = ntohl(a.s_addr);
    if (h == net || h == (net | ~_mask(prefix))) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config",
                       "ipam.addresses[0].address %.40s is not a host address", addr);
        return false;
    }
    c->subnet.s_addr = htonl(net);
    c->prefix = prefix;
    c->range_start = c->range_end = a;
    c->gateway.s_addr = 0;
    c->static_ipam = true;
    return true;
}

/* vxlan: {name, vni, port, local, remotes}; absent: none. */
static bool _vxlan(json_t *root, br_conf *c, cnip_error *e)
{
    json_t *v = json_object_get(root, "vxlan");
    if (!v || json_is_null(v)) return true;
    br_vxlan *x = &c->vxlan;
    const char *name;
    bool set;
    json_t *vni = json_object_get(v, "vni"), *port = json_object_get(v, "port");
    json_t *remotes = json_object_get(v, "remotes");
    if (!json_is_object(v) || !_opt_str(v, "name", "vxlan.", &name, e) ||
        !_opt_ip(v, "local", "vxlan.", &x->local, &set, e))
        return false;
    if (!name || !*name || strlen(name) >= IF_NAMESIZE || strpbrk(name, "/ \t\n:") || !set ||
        !json_is_integer(vni) || json_integer_value(vni) < 1 ||
        json_integer_value(vni) > 16777215 ||
        (port && (!json_is_integer(port) || json_integer_value(port) < 1 ||
                  json_integer_value(port) > 65535)) ||
        !json_is_array(remotes) || json_array_size(remotes) > BR_MAX_REMOTES) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config",
                       "vxlan: want {name (an interface name), vni (1 to 16777215), port (1 to "
                       "65535), local (IPv4), remotes (at most %d IPv4 addresses)}",
                       BR_MAX_REMOTES);
        return false;
    }
    snprintf(x->name, sizeof(x->name), "%s", name);
    x->vni = (uint32_t)json_integer_value(vni);
    x->port = port ? (int)json_integer_value(port) : 4789;
    for (size_t i = 0; i < json_array_size(remotes); i++) {
        const char *r = json_string_value(json_array_get(remotes, i));
        if (!r || inet_pton(AF_INET, r, &x->remotes[x->n_remotes]) != 1) {
            cnip_error_set(e, CNIP_E_CONFIG, "invalid network config",
                           "vxlan.remotes[%zu]: not an IPv4 address", i);
            return false;
        }
        x->n_remotes++;
    }
    x->on = true;
    return true;
}

static bool _ipam(json_t *root, cnip_cmd cmd, br_conf *c, cnip_error *e)
{
    json_t *ipam = json_object_get(root, "ipam");
    if (!ipam || json_is_null(ipam)) {
        if (cmd == CNIP_DEL) return true;
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config", "ipam is missing");
        return false;
    }
    if (!json_is_object(ipam)) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config", "ipam is not an object");
        return false;
    }
    const char *type, *dir;
    if (!_opt_str(ipam, "type", "ipam.", &type, e)) return false;
    bool is_static = type && strcmp(type, "static") == 0;
    if (!type || (strcmp(type, "host-local") != 0 && !is_static)) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config",
                       "ipam.type %.40s: tessera-bridge keeps addresses as host-local does; want "
                       "\"host-local\" (or \"static\" with one address)",
                       type ? type : "(missing)");
        return false;
    }
    if (!_opt_str(ipam, "dataDir", "ipam.", &dir, e)) return false;
    if (!dir) dir = DEFAULT_DATA_DIR;
    if (dir[0] != '/' || strstr(dir, "/../") || strlen(dir) >= sizeof(c->data_dir) - 80 ||
        (strlen(dir) >= 3 && strcmp(dir + strlen(dir) - 3, "/..") == 0)) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config",
                       "ipam.dataDir %.80s: want an absolute path without '..', shorter than %zu",
                       dir, sizeof(c->data_dir) - 80);
        return false;
    }
    snprintf(c->data_dir, sizeof(c->data_dir), "%s", dir);
    if (is_static ? !_static(ipam, c, e) : (!_range(ipam, c, e) || !_routes(ipam, c, e)))
        return false;
    c->has_ipam = true;
    return true;
}

bool br_conf_parse(const char *text, size_t len, cnip_cmd cmd, br_conf *c, cnip_error *e)
{
    memset(c, 0, sizeof(*c));
    json_t *root = cnip_conf_open(text, len, cmd, c->cni_version, sizeof(c->cni_version), c->name,
                                  sizeof(c->name), e);
    if (!root) return false;
    bool ok = false;
    const char *bridge;
    json_t *mtu = json_object_get(root, "mtu");
    bool masq = false, netfilter = true;
    if (!_opt_str(root, "bridge", "", &bridge, e)) {
    } else if (bridge && (!*bridge || strlen(bridge) >= IF_NAMESIZE || strchr(bridge, '/') ||
                          strpbrk(bridge, " \t\n:") || strcmp(bridge, ".") == 0 ||
                          strcmp(bridge, "..") == 0)) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config",
                       "bridge %.40s: not an interface name (1 to %d characters, no '/', ':' or "
                       "spaces)",
                       bridge, IF_NAMESIZE - 1);
    } else if (mtu && (!json_is_integer(mtu) || json_integer_value(mtu) < 68 ||
                       json_integer_value(mtu) > 65535)) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config",
                       "mtu: want an integer from 68 to 65535");
    } else if (!_opt_bool(root, "isGateway", &c->is_gateway, e) ||
               !_opt_bool(root, "isDefaultGateway", &c->default_route, e) ||
               !_opt_bool(root, "hairpinMode", &c->hairpin, e) ||
               !_opt_bool(root, "portIsolation", &c->port_isolation, e) ||
               !_opt_bool(root, "disableIPv6", &c->disable_ipv6, e) ||
               !_opt_bool(root, "ipMasq", &masq, e) ||
               !_opt_bool(root, "bridgeNetfilter", &netfilter, e) ||
               !_opt_bool(root, "removeIdleBridge", &c->remove_idle, e) || !_vxlan(root, c, e)) {
    } else if (masq) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config",
                       "ipMasq is not supported by tessera-bridge: masquerade the subnet outside "
                       "the plugin (the agent adds one rule per network)");
    } else {
        snprintf(c->bridge, sizeof(c->bridge), "%s", bridge ? bridge : "cni0");
        c->mtu = mtu ? (int)json_integer_value(mtu) : 0;
        if (c->default_route) c->is_gateway = true;
        c->no_netfilter = !netfilter;
        ok = _ipam(root, cmd, c, e);
        if (ok && c->static_ipam && (c->is_gateway || c->port_isolation)) {
            cnip_error_set(e, CNIP_E_CONFIG, "invalid network config",
                           "ipam.type static: a network without a gateway (isGateway, "
                           "isDefaultGateway and portIsolation false)");
            ok = false;
        }
    }
    json_decref(root);
    return ok;
}
