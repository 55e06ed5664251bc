/* netfilter.h: the agent's iptables rules for one CNI network (one bridge):
 * what a kernel may reach, and who may reach it.
 *
 * filter table, per network <net> (the bridge's name):
 *   INPUT   -i <net> -> TESSERA-IN-<net>: what containers send to the host
 *     drop a loopback source (route_localnet lets it in), drop 127.0.0.0/8
 *     unless it answers a connection the host made (CVE-2020-8558's rule),
 *     accept replies (RELATED, ESTABLISHED) and agent.cni_host_ports, drop
 *     the rest
 *   FORWARD -i <net>, -o <net> -> TESSERA-FWD-<net>:
 *     drop what was DNATed from 127.0.0.0/8 (a published port on loopback
 *     is for the host's own processes); between two containers: accepted
 *     only when the sender is a kernel of a session of several kernels
 *     (TESSERA-SES-<net>) and the receiver of the same session, else drop;
 *     replies pass; into the bridge only DNAT (published ports, from
 *     agent.cni_publish_from), else drop; out of it: a source outside the
 *     subnet is dropped, then agent.cni_deny, and with agent.cni_outbound =
 *     none everything
 *   TESSERA-SES-<net>: per kernel of a session of several kernels `-s
 *     <ip>/32 -m mac --mac-source <mac> -g TESSERA-S-<session>` (its port
 *     only passes its MAC: tessera-bridge's portIsolation), last `! -s
 *     <subnet> -j DROP` (a forged source). A kernel alone in its session
 *     (the common case) has no rules: nothing in the bridge may reach it
 *     and it reaches no other kernel anyway, so its ADD and DEL run no
 *     iptables at all
 *   TESSERA-S-<16 hex>: per kernel of the session `-d <ip>/32 -j ACCEPT`;
 *     the hex is FNV-1a 64 of network name and session id
 * nat table: `POSTROUTING -s <subnet> ! -d <subnet> -m comment --comment
 *   tessera:<net> -j MASQUERADE` with agent.cni_outbound = nat.
 * Chains other than FORWARD and INPUT only RETURN or drop what they do not
 * accept, so the host's own rules still see the rest, and two networks
 * (two agents on a host) never decide for each other.
 *
 * The kernels of a network are kept as empty files in
 * <records_dir>/<net>/ named "<session>,<ip>,<mac>,<kernel id>" (tmpfs:
 * gone at a reboot, with the rules). Setup rebuilds the network's chains
 * from them in one iptables-restore (after an agent restart, or whenever a
 * faster change was refused); a kernel's ADD or DEL changes only its two
 * rules (and its session's chain when it is the first or the last of it),
 * in one iptables-restore and without iptables-save. */
#ifndef AGENT_NETFILTER_H
#define AGENT_NETFILTER_H

#include "libcommon/common.h"

#define NETFILTER_MAX_CIDRS 32
#define NETFILTER_MAX_PORTS 32
#define NETFILTER_CIDR_LEN 19 /* "255.255.255.255/32" */
#define NETFILTER_IP_LEN 16
#define NETFILTER_ID_LEN 81

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
bool netfilter_cidr_parse(const char *s, char out[NETFILTER_CIDR_LEN]);

typedef struct netfilter_kernel {
    char id[NETFILTER_ID_LEN];
    char ip[NETFILTER_IP_LEN];
    char mac[18];     /* lower case; "" when the bridge plugin did not say */
    char session[17]; /* netfilter_session_key */
} netfilter_kernel;

/* 16 hex digits of FNV-1a 64 over the network name and the session id. */
void netfilter_session_key(const char *network, const char *session_id, char out[17]);

typedef struct netfilter_net {
    const char *network; /* the bridge's name: letters, digits, '_', '.', '-', at most 15 */
    const char *subnet;  /* the kernels' subnet */
    const netfilter_policy *policy;
    const char *records_dir; /* the kernels' records: <records_dir>/<network>/ */
    /* Where the runtime keeps kernels (<state>/kernels): setup drops the
     * records of kernels not there. NULL: keep every record. */
    const char *kernels_dir;
} netfilter_net;

/* ---- the rules as iptables-restore input (heap), without touching the host ---- */

/* Setup: given `iptables-save` output, make the network's chains, entry
 * jumps and masquerade rule what net and the kernels say (duplicates and
 * leftovers deleted, session chains no kernel uses removed). */
char *netfilter_plan_setup(const netfilter_net *net, const netfilter_kernel *ks, int n,
                           const char *save);
/* ADD of k, given the network's records (a record of the same kernel or
 * address is replaced). */
char *netfilter_plan_add(const netfilter_net *net, const netfilter_kernel *k,
                         const netfilter_kernel *recs, int n);
/* DEL of k (one of recs). */
char *netfilter_plan_del(const netfilter_net *net, const netfilter_kernel *k,
                         const netfilter_kernel *recs, int n);
/* Everything of the network in the save; NULL when there is nothing. */
char *netfilter_plan_remove(const char *network, const char *save);

/* ---- on the host (one at a time in the process) -------------------------------- */

/* Read the tables and apply netfilter_plan_setup with the records. */
bool netfilter_setup(const netfilter_net *net, ts_err *err) TS_MUST_CHECK;
/* k's rules (setup when the quick change is refused), and its record. */
bool netfilter_kernel_add(const netfilter_net *net, const netfilter_kernel *k,
                          ts_err *err) TS_MUST_CHECK;
/* Record k unless its kernel has a record (nothing else: the next setup
 * makes its rules). For kernels that ran before the records existed. */
bool netfilter_kernel_record(const netfilter_net *net, const netfilter_kernel *k,
                             ts_err *err) TS_MUST_CHECK;
/* The kernel's rules and record; none is success (without running anything). */
bool netfilter_kernel_del(const netfilter_net *net, const char *kernel_id,
                          ts_err *err) TS_MUST_CHECK;
/* Every rule and chain of the network, and its records. */
bool netfilter_remove(const char *network, const char *records_dir, ts_err *err) TS_MUST_CHECK;

#endif
