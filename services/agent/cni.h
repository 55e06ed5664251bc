/* cni.h: a kernel's network, through CNI plugins.
 *
 * A named network namespace /run/netns/tessera-<kernel> (created here, the way
 * `ip netns add` does: a bind mount of the namespace onto that file, with lo
 * up), then the plugins are exec'd as the CNI spec says (CNI_COMMAND,
 * CNI_CONTAINERID = kernel id, CNI_NETNS, CNI_IFNAME=eth0, CNI_PATH, the
 * network config on stdin, cniVersion 1.0.0, which Debian's plugins 1.1.1
 * speak):
 *   the bridge plugin (agent.cni_bridge: tessera-bridge, ours, by default,
 *            or Debian's bridge with host-local): bridge = the network name,
 *            isGateway, hairpinMode, host-local IPAM over the configured
 *            subnet, leases in <state>/cni/networks (both plugins keep them
 *            the same way)
 *            and portIsolation, disableIPv6 (tessera-bridge's; for another
 *            plugin cni_add isolates the port itself)
 *   the port plugin (agent.cni_portmap: tessera-portmap, ours, by default,
 *            or Debian's portmap): portMappings for the service ports, each
 *            with hostIP = an address of agent.cni_publish_addrs (none: every
 *            local address), snat so 127.0.0.1 works; only when there are
 *            ports
 * Between the two, the kernel's rules (netfilter.h): its session's chain
 * lets it reach that session's kernels only. DEL runs them in reverse with
 * the ADD result as prevResult, which removes the veth, the address lease
 * and the iptables rules. */
#ifndef AGENT_CNI_H
#define AGENT_CNI_H

#include "container.h"

#include <jansson.h>

typedef struct cni_conf {
    const char *bin_dir;  /* /usr/lib/cni */
    const char *network;  /* network and bridge name */
    const char *subnet;   /* host-local pool */
    const char *data_dir; /* <state>/cni */
    const char *portmap;  /* path of the port plugin (cni_plugin_locate) */
    const char *bridge;   /* path of the bridge plugin (cni_plugin_locate) */
    /* a cluster session's network (cni_cluster.h): tessera-bridge's path
     * (whatever the bridge plugin is; NULL: cluster kernels fail) and the
     * VXLAN port between the nodes */
    const char *cluster_bridge;
    int vxlan_port;
} cni_conf;

/* The network's policy, for every network of the process (the agent sets
 * it at its start; a runtime used without it gets netfilter_policy_default
 * and every local address). The option texts as netfilter_policy_parse and
 * cni_publish_resolve take them; state_dir is where a kernel's state.json
 * names its session (<state_dir>/kernels/<id>/state.json, session_id;
 * without one a kernel is a session of its own). Logs what is in force.
 * false with err naming the bad option. */
typedef struct cni_policy {
    const char *state_dir;
    const char *kernel_host;   /* the host wsproxy connects to (KernelStarted.kernel_host) */
    const char *publish_addrs; /* agent.cni_publish_addrs */
    const char *publish_from;  /* agent.cni_publish_from */
    const char *host_ports;    /* agent.cni_host_ports */
    const char *deny;          /* agent.cni_deny */
    const char *outbound;      /* agent.cni_outbound */
} cni_policy;
bool cni_policy_set(const cni_policy *p, ts_err *err) TS_MUST_CHECK;

/* agent.cni_publish_addrs into IPv4 addresses (*n of at most max): "*" is
 * none (every local address); a list is those; "" is kernel_host's: the
 * address, or what this host resolves the name to, that are addresses of
 * this host (none when none is, or a name is loopback only here). false
 * with err on a bad list. */
bool cni_publish_resolve(const char *option, const char *kernel_host, char out[][16], int max,
                         int *n, ts_err *err) TS_MUST_CHECK;

/* The network's rules (netfilter.h), made what the policy and the kernels'
 * records say: at the agent's start (so rules lost or changed while it was
 * down are back), and by the first ADD of a network in a process otherwise. */
bool cni_network_setup(const char *network, const char *subnet, ts_err *err) TS_MUST_CHECK;
/* When the network's bridge goes: its rules, chains and records, and
 * route_localnet on the bridge if it is still there. */
bool cni_network_remove(const char *network, const char *subnet, ts_err *err) TS_MUST_CHECK;

/* The plugin an option (agent.cni_portmap, agent.cni_bridge) names: ours
 * ("tessera-portmap", "tessera-bridge", or empty) is the one installed beside
 * the agent (build/bin in the dev stack, $(PREFIX)/bin after `make
 * install`); another plain name is that plugin in bin_dir ("portmap",
 * "bridge": Debian's); an absolute path is that file. Heap path of an
 * executable file, or NULL with err set (naming the option). */
char *cni_plugin_locate(const char *option, const char *plugin, const char *ours,
                        const char *bin_dir, ts_err *err);

/* Run one plugin (a path, or a name in bin_dir) for the kernel's interface
 * ifname (CNI_IFNAME) with conf on stdin; *out (may be NULL) gets its
 * stdout on success; a plugin's error JSON becomes err. */
bool cni_plugin_run(const cni_conf *c, const char *plugin, const char *cmd, const char *kernel_id,
                    const char *netns, const char *ifname, json_t *conf, char **out,
                    ts_err *err) TS_MUST_CHECK;

/* The host end of the kernel's veth pair from its CNI ADD result (the
 * interface that is neither the bridge `network` nor in the sandbox); false
 * when the result names none. */
bool cni_result_host_if(const char *result, const char *network, char *buf,
                        size_t size) TS_MUST_CHECK;

/* /run/netns/tessera-<kernel_id> */
void cni_netns_path(const char *kernel_id, char *buf, size_t size);
bool cni_netns_create(const char *path, ts_err *err) TS_MUST_CHECK;
/* Unmount and remove (idempotent). */
bool cni_netns_delete(const char *path, ts_err *err) TS_MUST_CHECK;

/* ADD: on success *result is the bridge result (heap JSON text, keep it for
 * DEL) and ip the container's IPv4 address. session_id: the session whose
 * other kernels it may reach; NULL or "" for a kernel alone in its session,
 * which gets no rules of its own (netfilter.h: nothing reaches it, it
 * reaches no kernel, and the network's rules cover the rest). Undoes itself
 * on failure. */
bool cni_add(const cni_conf *c, const char *kernel_id, const char *session_id, const char *netns,
             const kernel_ports *ports, int n_ports, char **result, char *ip, size_t ip_size,
             ts_err *err) TS_MUST_CHECK;
/* cni_network_remove, errors logged (its older name: the outbound NAT rule
 * was the network's only one). */
void cni_masq_remove(const char *network, const char *subnet);
/* DEL (idempotent); prev_result may be NULL. bridge, portmap: the plugins the
 * ADD ran (a kernel may outlive a change of agent.cni_bridge or
 * agent.cni_portmap, and only that port plugin finds its rules), or NULL or
 * no longer there: c->bridge, c->portmap. */
bool cni_del(const cni_conf *c, const char *kernel_id, const char *netns, const kernel_ports *ports,
             int n_ports, const char *prev_result, const char *bridge, const char *portmap,
             ts_err *err) TS_MUST_CHECK;

#endif
