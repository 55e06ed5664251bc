/* netfilter_policy.h: the policy of the agent's network rules
 * (netfilter.h), from its options: the addresses kernels never reach
 * (agent.cni_deny), who may reach published ports (agent.cni_publish_from),
 * the host ports kernels may reach (agent.cni_host_ports), and what becomes
 * of outbound traffic (agent.cni_outbound). */
#ifndef AGENT_NETFILTER_POLICY_H
#define AGENT_NETFILTER_POLICY_H

#include "libcommon/common.h"

#define NETFILTER_MAX_CIDRS 32
#define NETFILTER_MAX_PORTS 32
#define NETFILTER_CIDR_LEN 19 /* "255.255.255.255/32" */

typedef enum netfilter_outbound {
    NETFILTER_OUT_NAT,    /* masquerade the subnet's outbound traffic */
    NETFILTER_OUT_ROUTED, /* forward it with the containers' addresses */
    NETFILTER_OUT_NONE,   /* drop it: nothing leaves but replies */
} netfilter_outbound;

typedef struct netfilter_port {
    char proto[4]; /* "tcp" or "udp" */
    int port;
} netfilter_port;

typedef struct netfilter_policy {
    char deny[NETFILTER_MAX_CIDRS][NETFILTER_CIDR_LEN]; /* containers never reach these */
    int n_deny;
    char publish_from[NETFILTER_MAX_CIDRS][NETFILTER_CIDR_LEN]; /* none: anywhere */
    int n_publish_from;
    netfilter_port host_ports[NETFILTER_MAX_PORTS]; /* host ports containers may reach */
    int n_host_ports;
    netfilter_outbound outbound;
} netfilter_policy;

/* The defaults: deny 169.254.0.0/16 (cloud metadata), no host ports,
 * published ports from anywhere, outbound NAT. */
void netfilter_policy_default(netfilter_policy *p);
/* The agent's options: deny and publish_from comma-separated IPv4 CIDRs
 * ("a.b.c.d" alone is a /32), host_ports "udp/53,tcp/53" (a bare port is
 * tcp), outbound "nat", "routed" or "none". NULL or "" for a list: none.
 * false with err naming the option. */
bool netfilter_policy_parse(const char *deny, const char *publish_from, const char *host_ports,
                            const char *outbound, netfilter_policy *p, ts_err *err) TS_MUST_CHECK;
/* "a.b.c.d/n" or "a.b.c.d" (/32) into "a.b.c.d/n" with the host bits
 * cleared; false when it is not one. */
bool netfilter_cidr_parse(const char *s, char out[NETFILTER_CIDR_LEN]) TS_MUST_CHECK;

#endif
