/* cni_cluster.h: a cluster session's network on this node (docs/agent.md,
 * "The cluster network").
 *
 * Each kernel of a session of several kernels gets a second interface,
 * eth1, with its address on the session's own network (the registry's
 * registry.cluster_subnet; every session has its own, so they may share
 * addresses), through tessera-bridge (CNI, CNI_IFNAME eth1):
 *   a bridge per session and node, tc<vni><net> (6 hex digits each: the
 *           session's network id and a hash of agent.cni_network, so two
 *           agents on one host never share one), without an address of the
 *           host's, its frames kept from the host's iptables;
 *   a VXLAN device tv<vni><net> on it when kernels of the session run on
 *           other nodes: VXLAN id = the session's network id, UDP
 *           agent.cluster_vxlan_port from this node's address to theirs,
 *           a flood entry per node (broadcasts and ARP reach them), MAC
 *           learning for the rest; the interfaces' MTU is this node's
 *           interface's less VXLAN's 50 bytes;
 *   the kernel's port on that bridge (no isolation: the kernels of one
 *           session are one layer-2 network), a static address;
 *   FORWARD -i <bridge> -o <bridge> -j ACCEPT while the bridge is there
 *           (br_netfilter hands bridged frames to the host's iptables,
 *           whose FORWARD policy may be DROP).
 * Nothing else is on the bridge, the host routes nothing into it, and a
 * kernel can neither reach a node's address (agent.cni_deny, its INPUT
 * chain) nor send VXLAN itself, so no other session reaches the network.
 * The bridge and its VXLAN device go with the session's last kernel on the
 * node (removeIdleBridge). */
#ifndef AGENT_CNI_CLUSTER_H
#define AGENT_CNI_CLUSTER_H

#include "services/agent/cni.h"

#define CNI_CLUSTER_IFNAME "eth1"

/* The network configuration of kernel k's cluster interface (heap JSON
 * text: kept in the kernel's state.json, so that its DEL names the same
 * bridge and device). false with err when k does not fit this node (no
 * tessera-bridge, an address overlapping agent.cni_subnet, a bad
 * address). */
bool cni_cluster_conf(const cni_conf *c, const kernel_cluster *k, char **conf,
                      ts_err *err) TS_MUST_CHECK;

/* ADD: *result the plugin's result (heap JSON text). */
bool cni_cluster_add(const cni_conf *c, const char *kernel_id, const char *netns, const char *conf,
                     char **result, ts_err *err) TS_MUST_CHECK;
/* DEL (idempotent): the interface, and the bridge with its VXLAN device
 * when no kernel is left on it. */
bool cni_cluster_del(const cni_conf *c, const char *kernel_id, const char *netns, const char *conf,
                     const char *prev_result, ts_err *err) TS_MUST_CHECK;

#endif
