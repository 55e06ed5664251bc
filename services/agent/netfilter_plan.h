/* netfilter_plan.h: the agent's iptables rules for one CNI network (one
 * bridge), as iptables-restore input: what a kernel may reach, and who may
 * reach it. Text only: netfilter.c applies it on the host.
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
 * (two agents on a host) never decide for each other. */
#ifndef AGENT_NETFILTER_PLAN_H
#define AGENT_NETFILTER_PLAN_H

#include "services/agent/netfilter_policy.h"

#define NETFILTER_IP_LEN 16
#define NETFILTER_ID_LEN 81

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

/* The record r is replaced by k: the same kernel (a repeated ADD) or the
 * same address (given again, its DEL never came). */
bool netfilter_plan_replaced(const netfilter_kernel *r, const netfilter_kernel *k) TS_MUST_CHECK;

#endif
