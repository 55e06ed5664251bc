/* netfilter_policy.c: the policy of the agent's network rules (netfilter_policy.h). */
#include "services/agent/netfilter_policy.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void netfilter_policy_default(netfilter_policy *p)
{
    memset(p, 0, sizeof(*p));
    strcpy(p->deny[p->n_deny++], "169.254.0.0/16");
    p->outbound = NETFILTER_OUT_NAT;
}

bool netfilter_cidr_parse(const char *s, char out[NETFILTER_CIDR_LEN])
{
    char ip[INET_ADDRSTRLEN];
    const char *slash = strchr(s, '/');
    size_t n = slash ? (size_t)(slash - s) : strlen(s);
    if (n == 0 || n >= sizeof(ip)) return false;
    memcpy(ip, s, n);
    ip[n] = '\0';
    struct in_addr a;
    if (inet_pton(AF_INET, ip, &a) != 1) return false;
    int prefix = 32;
    if (slash) {
        const char *p = slash + 1;
        if (!*p || strlen(p) > 2) return false;
        prefix = 0;
        for (; *p; p++) {
            if (*p < '0' || *p > '9') return false;
            prefix = prefix * 10 + (*p - '0');
        }
        if (prefix > 32) return false;
    }
    uint32_t mask = prefix ? 0xffffffffu << (32 - prefix) : 0;
    a.s_addr = htonl(ntohl(a.s_addr) & mask);
    inet_ntop(AF_INET, &a, ip, sizeof(ip));
    snprintf(out, NETFILTER_CIDR_LEN, "%s/%d", ip, prefix);
    return true;
}

/* The next comma-separated item of *p (spaces around it dropped) into buf;
 * false at the end. */
static bool _item(const char **p, char *buf, size_t size)
{
    while (**p == ',' || **p == ' ' || **p == '\t')
        (*p)++;
    if (!**p) return false;
    const char *end = strchr(*p, ',');
    size_t n = end ? (size_t)(end - *p) : strlen(*p);
    while (n && ((*p)[n - 1] == ' ' || (*p)[n - 1] == '\t'))
        n--;
    snprintf(buf, size, "%.*s", (int)n, *p);
    *p += n;
    return true;
}

static bool _cidrs(const char *option, const char *text, char (*out)[NETFILTER_CIDR_LEN], int *n,
                   ts_err *err)
{
    *n = 0;
    char item[64];
    for (const char *p = text ? text : ""; _item(&p, item, sizeof(item));) {
        if (*n == NETFILTER_MAX_CIDRS) {
            ts_err_set(err, "%s: at most %d networks", option, NETFILTER_MAX_CIDRS);
            return false;
        }
        if (!netfilter_cidr_parse(item, out[*n])) {
            ts_err_set(err, "%s: '%s' is not an IPv4 network (a.b.c.d/len or a.b.c.d)", option,
                       item);
            return false;
        }
        (*n)++;
    }
    return true;
}

static bool _ports(const char *text, netfilter_policy *p, ts_err *err)
{
    char item[64];
    for (const char *s = text ? text : ""; _item(&s, item, sizeof(item));) {
        if (p->n_host_ports == NETFILTER_MAX_PORTS) {
            ts_err_set(err, "agent.cni_host_ports: at most %d ports", NETFILTER_MAX_PORTS);
            return false;
        }
        netfilter_port *hp = &p->host_ports[p->n_host_ports];
        const char *num = item;
        strcpy(hp->proto, "tcp");
        char *slash = strchr(item, '/');
        if (slash) {
            *slash = '\0';
            if (strcasecmp(item, "tcp") != 0 && strcasecmp(item, "udp") != 0) {
                ts_err_set(err, "agent.cni_host_ports: '%s/%s': the protocol is tcp or udp", item,
                           slash + 1);
                return false;
            }
            snprintf(hp->proto, sizeof(hp->proto), "%s", strcasecmp(item, "udp") ? "tcp" : "udp");
            num = slash + 1;
        }
        char *end;
        long v = strtol(num, &end, 10);
        if (!*num || *end || v < 1 || v > 65535) {
            ts_err_set(err, "agent.cni_host_ports: '%s' is not a port (1-65535)", num);
            return false;
        }
        hp->port = (int)v;
        p->n_host_ports++;
    }
    return true;
}

bool netfilter_policy_parse(const char *deny, const char *publish_from, const char *host_ports,
                            const char *outbound, netfilter_policy *p, ts_err *err)
{
    memset(p, 0, sizeof(*p));
    if (!_cidrs("agent.cni_deny", deny, p->deny, &p->n_deny, err) ||
        !_cidrs("agent.cni_publish_from", publish_from, p->publish_from, &p->n_publish_from, err) ||
        !_ports(host_ports, p, err))
        return false;
    if (!outbound || !*outbound || strcmp(outbound, "nat") == 0) {
        p->outbound = NETFILTER_OUT_NAT;
    } else if (strcmp(outbound, "routed") == 0) {
        p->outbound = NETFILTER_OUT_ROUTED;
    } else if (strcmp(outbound, "none") == 0) {
        p->outbound = NETFILTER_OUT_NONE;
    } else {
        ts_err_set(err, "agent.cni_outbound: '%s': nat, routed or none", outbound);
        return false;
    }
    return true;
}
