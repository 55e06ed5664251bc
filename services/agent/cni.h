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
 *   the port plugin (agent.cni_portmap: tessera-portmap, ours, by default,
 *            or Debian's portmap): portMappings for the service ports, snat
 *            so 127.0.0.1 works; only when there are ports
 * DEL runs them in reverse with the ADD result as prevResult, which removes
 * the veth, the address lease and the iptables rules. */
#ifndef AGENT_CNI_H
#define AGENT_CNI_H

#include "container.h"

typedef struct cni_conf {
    const char *bin_dir;  /* /usr/lib/cni */
    const char *network;  /* network and bridge name */
    const char *subnet;   /* host-local pool */
    const char *data_dir; /* <state>/cni */
    const char *portmap;  /* path of the port plugin (cni_plugin_locate) */
    const char *bridge;   /* path of the bridge plugin (cni_plugin_locate) */
} cni_conf;

/* The plugin an option (agent.cni_portmap, agent.cni_bridge) names: ours
 * ("tessera-portmap", "tessera-bridge", or empty) is the one installed beside
 * the agent (build/bin in the dev stack, $(PREFIX)/bin after `make
 * install`); another plain name is that plugin in bin_dir ("portmap",
 * "bridge": Debian's); an absolute path is that file. Heap path of an
 * executable file, or NULL with err set (naming the option). */
char *cni_plugin_locate(const char *option, const char *plugin, const char *ours,
                        const char *bin_dir, ts_err *err);

/* /run/netns/tessera-<kernel_id> */
void cni_netns_path(const char *kernel_id, char *buf, size_t size);
bool cni_netns_create(const char *path, ts_err *err) TS_MUST_CHECK;
/* Unmount and remove (idempotent). */
bool cni_netns_delete(const char *path, ts_err *err) TS_MUST_CHECK;

/* ADD: on success *result is the bridge result (heap JSON text, keep it for
 * DEL) and ip the container's IPv4 address. Undoes itself on failure. */
bool cni_add(const cni_conf *c, const char *kernel_id, const char *netns, const kernel_ports *ports,
             int n_ports, char **result, char *ip, size_t ip_size, ts_err *err) TS_MUST_CHECK;
/* The first ADD of a network in this process makes sure one iptables rule
 * masquerades the subnet's outbound traffic (the bridge runs with ipMasq off);
 * cni_masq_remove deletes it (when the network's bridge goes). */
void cni_masq_remove(const char *network, const char *subnet);
/* DEL (idempotent); prev_result may be NULL. bridge, portmap: the plugins the
 * ADD ran (a kernel may outlive a change of agent.cni_bridge or
 * agent.cni_portmap, and only that port plugin finds its rules), or NULL or
 * no longer there: c->bridge, c->portmap. */
bool cni_del(const cni_conf *c, const char *kernel_id, const char *netns, const kernel_ports *ports,
             int n_ports, const char *prev_result, const char *bridge, const char *portmap,
             ts_err *err) TS_MUST_CHECK;

#endif
