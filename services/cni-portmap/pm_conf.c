/* pm_conf.c: tessera-portmap's input, checked (pm_conf.h). */
#include "services/cni-portmap/pm_conf.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A port: a JSON integer in 1..65535. */
static bool _port(json_t *m, const char *key, int i, int *out, cnip_error *e)
{
    json_t *v = json_object_get(m, key);
    if (!v) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid port mapping", "portMappings[%d]: %s is missing",
                       i, key);
        return false;
    }
    json_int_t n = json_is_integer(v) ? json_integer_value(v) : 0;
    if (n < 1 || n > 65535) {
        char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        cnip_error_set(e, CNIP_E_CONFIG, "invalid port mapping",
                       "portMappings[%d]: %s %.40s is not a port (1-65535)", i, key, t ? t : "?");
        free(t);
        return false;
    }
    *out = (int)n;
    return true;
}

/* One mapping; *skip when it is for IPv6 only (a v6 hostIP). */
static bool _mapping(json_t *m, int i, pm_mapping *out, bool *skip, cnip_error *e)
{
    *skip = false;
    memset(out, 0, sizeof(*out));
    if (!json_is_object(m)) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid port mapping",
                       "portMappings[%d] is not an object", i);
        return false;
    }
    if (!_port(m, "hostPort", i, &out->host_port, e) ||
        !_port(m, "containerPort", i, &out->container_port, e))
        return false;
    json_t *p = json_object_get(m, "protocol");
    const char *proto = p ? json_string_value(p) : "tcp";
    if (proto && strcasecmp(proto, "tcp") == 0) {
        out->proto = "tcp";
    } else if (proto && strcasecmp(proto, "udp") == 0) {
        out->proto = "udp";
    } else {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid port mapping",
                       "portMappings[%d]: protocol %.40s: only tcp and udp", i,
                       proto ? proto : "(not a string)");
        return false;
    }
    json_t *h = json_object_get(m, "hostIP");
    if (h && !json_is_null(h)) {
        const char *ip = json_string_value(h);
        struct in_addr a4;
        struct in6_addr a6;
        if (!ip) {
            cnip_error_set(e, CNIP_E_CONFIG, "invalid port mapping",
                           "portMappings[%d]: hostIP is not a string", i);
            return false;
        }
        if (*ip && inet_pton(AF_INET, ip, &a4) == 1) {
            inet_ntop(AF_INET, &a4, out->host_ip, sizeof(out->host_ip));
        } else if (*ip && inet_pton(AF_INET6, ip, &a6) == 1) {
            *skip = true;
        } else if (*ip) {
            cnip_error_set(e, CNIP_E_CONFIG, "invalid port mapping",
                           "portMappings[%d]: hostIP %.60s is not an IP address", i, ip);
            return false;
        }
    }
    return true;
}

static bool _mappings(json_t *root, pm_conf *c, cnip_error *e)
{
    json_t *rc = json_object_get(root, "runtimeConfig");
    if (!rc || json_is_null(rc)) return true;
    if (!json_is_object(rc)) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config",
                       "runtimeConfig is not an object");
        return false;
    }
    json_t *pm = json_object_get(rc, "portMappings");
    if (!pm || json_is_null(pm)) return true;
    if (!json_is_array(pm)) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config",
                       "runtimeConfig.portMappings is not an array");
        return false;
    }
    size_t n = json_array_size(pm);
    if (n > PM_MAX_MAPPINGS) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config", "%zu port mappings: at most %d",
                       n, PM_MAX_MAPPINGS);
        return false;
    }
    c->maps = ts_calloc(n ? n : 1, sizeof(*c->maps));
    for (size_t i = 0; i < n; i++) {
        pm_mapping m;
        bool skip;
        if (!_mapping(json_array_get(pm, i), (int)i, &m, &skip, e)) return false;
        if (skip) continue;
        for (int k = 0; k < c->n_maps; k++) {
            if (c->maps[k].host_port == m.host_port && strcmp(c->maps[k].proto, m.proto) == 0 &&
                strcmp(c->maps[k].host_ip, m.host_ip) == 0) {
                cnip_error_set(e, CNIP_E_CONFIG, "invalid port mapping",
                               "portMappings[%zu]: host port %d/%s%s%s is mapped twice", i,
                               m.host_port, m.proto, m.host_ip[0] ? " on " : "", m.host_ip);
                return false;
            }
        }
        c->maps[c->n_maps++] = m;
    }
    return true;
}

/* The first IPv4 address of prevResult.ips: the container's, and its network. */
static bool _container_ip(json_t *prev, pm_conf *c, cnip_error *e)
{
    json_t *ips = json_object_get(prev, "ips");
    if (ips && !json_is_array(ips)) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid prevResult", "prevResult.ips is not an array");
        return false;
    }
    size_t i;
    json_t *v;
    json_array_foreach(ips, i, v)
    {
        const char *a = json_string_value(json_object_get(v, "address"));
        if (!a) {
            cnip_error_set(e, CNIP_E_CONFIG, "invalid prevResult",
                           "prevResult.ips[%zu].address is missing", i);
            return false;
        }
        if (strchr(a, ':')) continue; /* IPv6 */
        char ip[PM_IP_LEN + 4];
        int prefix = 32;
        const char *slash = strchr(a, '/');
        size_t n = slash ? (size_t)(slash - a) : strlen(a);
        struct in_addr in;
        char *end = NULL;
        if (slash) prefix = (int)strtol(slash + 1, &end, 10);
        if (n >= sizeof(ip) || (slash && (end == slash + 1 || *end || prefix < 0 || prefix > 32))) {
            cnip_error_set(e, CNIP_E_CONFIG, "invalid prevResult",
                           "prevResult.ips[%zu].address %.60s is not an IPv4 address/prefix", i, a);
            return false;
        }
        memcpy(ip, a, n);
        ip[n] = '\0';
        if (inet_pton(AF_INET, ip, &in) != 1) {
            cnip_error_set(e, CNIP_E_CONFIG, "invalid prevResult",
                           "prevResult.ips[%zu].address %.60s is not an IPv4 address/prefix", i, a);
            return false;
        }
        inet_ntop(AF_INET, &in, c->container_ip, sizeof(c->container_ip));
        uint32_t mask = prefix ? htonl(~0u << (32 - prefix)) : 0;
        struct in_addr net = {.s_addr = in.s_addr & mask};
        char nb[PM_IP_LEN];
        inet_ntop(AF_INET, &net, nb, sizeof(nb));
        snprintf(c->container_net, sizeof(c->container_net), "%s/%d", nb, prefix);
        return true;
    }
    return true;
}

bool pm_conf_parse(const char *text, size_t len, cnip_cmd cmd, pm_conf *c, cnip_error *e)
{
    memset(c, 0, sizeof(*c));
    c->snat = true;
    json_t *root = cnip_conf_open(text, len, cmd, c->cni_version, sizeof(c->cni_version), c->name,
                                  sizeof(c->name), e);
    if (!root) return false;
    bool ok = false;
    json_t *snat = json_object_get(root, "snat");
    json_t *prev = json_object_get(root, "prevResult");
    if (snat && !json_is_boolean(snat)) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config", "snat is not a boolean");
    } else {
        ok = true;
    }
    if (ok && snat) c->snat = json_is_true(snat);
    /* DEL needs only the name: it finds the rules by it and the container id,
     * and must clean up even after a runtime lost the rest. */
    if (ok && cmd != CNIP_DEL) ok = _mappings(root, c, e);
    if (ok && cmd != CNIP_DEL) {
        if (!prev || json_is_null(prev)) {
            cnip_error_set(e, CNIP_E_CONFIG, "invalid network config",
                           "no prevResult: tessera-portmap is a chained plugin");
            ok = false;
        } else if (!json_is_object(prev)) {
            cnip_error_set(e, CNIP_E_CONFIG, "invalid prevResult", "prevResult is not an object");
            ok = false;
        } else {
            ok = _container_ip(prev, c, e);
            if (ok && c->n_maps > 0 && !c->container_ip[0]) {
                cnip_error_set(e, CNIP_E_CONFIG, "invalid prevResult",
                               "no IPv4 address in prevResult.ips (tessera-portmap is IPv4 only)");
                ok = false;
            }
        }
    }
    if (ok && prev && json_is_object(prev)) c->prev_result = json_incref(prev);
    json_decref(root);
    if (!ok) pm_conf_free(c);
    return ok;
}

bool pm_conf_on_loopback(const pm_conf *c)
{
    for (int i = 0; i < c->n_maps; i++)
        if (!c->maps[i].host_ip[0] || strncmp(c->maps[i].host_ip, "127.", 4) == 0) return true;
    return false;
}

void pm_conf_free(pm_conf *c)
{
    if (!c) return;
    free(c->maps);
    json_decref(c->prev_result);
    c->maps = NULL;
    c->prev_result = NULL;
    c->n_maps = 0;
}
