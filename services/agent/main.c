/* tessera-agent: runs kernels as OCI containers on this node and reports its capacity.
 *
 * Wiring only: the option table, and the svc hooks of agent.c. Start-up,
 * dependencies and the health endpoints come from libcommon/svc.c. */
#include "libcommon/svc.h"
#include "services/agent/agent.h"
#include "services/agent/oci_client.h"

/* where `make install` puts the shim (PREFIX/lib/tessera) */
#ifndef TESSERA_SHIM_PATH
#define TESSERA_SHIM_PATH "/usr/local/lib/tessera/libtessera-cuda.so"
#endif

static char *id, *resource_group, *state_dir, *runc_path, *cni_bin_dir, *cni_network, *cni_subnet,
    *cni_portmap, *cni_bridge, *port_range, *insecure_registries, *registry_auth_file,
    *registry_ca_file, *advertise_addr, *cuda_shim_path, *cuda_driver_libs, *nvml_library,
    *term_path, *userns;
static int64_t log_cap, heartbeat_interval_ms, mock_gpus, mock_gpu_memory, max_parallel_pulls,
    pull_retries, pull_timeout_ms, mem, mem_reserve, shm, destroy_grace_ms, exited_retention_ms,
    exec_timeout_ms, exec_output_cap, userns_base, userns_size, rootfs_size, cluster_vxlan_port;
static char *cni_publish_addrs, *cni_publish_from, *cni_host_ports, *cni_deny, *cni_outbound;
static double cpu;
static bool destroy_on_stop, cuda_shim;

static const cfg_option agent_options[] = {
    {"agent.id", CFG_STRING, &id, "", 0, 0, NULL, false, NULL,
     "agent id, stable across restarts; names its command topic (default: the host name)"},
    {"agent.resource_group", CFG_STRING, &resource_group, "default", 0, 0, NULL, false, NULL,
     "resource group (scaling group) this agent serves"},
    {"agent.state_dir", CFG_STRING, &state_dir, "/var/lib/tessera/agent", 0, 0, NULL, false, NULL,
     "kernels, image cache, host port leases, CNI leases, kernel metadata"},
    {"agent.advertise_addr", CFG_STRING, &advertise_addr, "", 0, 0, NULL, false, NULL,
     "host:port others reach the agent's HTTP API and kernel ports at (default: as bound); "
     "https://host:port where a TLS terminator on the node answers for the agent"},
    {"agent.runc", CFG_STRING, &runc_path, "runc", 0, 0, NULL, false, NULL,
     "OCI runtime binary (runc; a name is looked up in PATH)"},
    {"agent.cni_bin_dir", CFG_STRING, &cni_bin_dir, "/usr/lib/cni", 0, 0, NULL, false, NULL,
     "directory of Debian's CNI plugins (bridge and host-local when agent.cni_bridge says, portmap "
     "when agent.cni_portmap says)"},
    {"agent.cni_network", CFG_STRING, &cni_network, "tessera0", 0, 0, NULL, false, NULL,
     "CNI network and bridge name (at most 15 characters)"},
    {"agent.cni_subnet", CFG_STRING, &cni_subnet, "10.88.0.0/16", 0, 0, NULL, false, NULL,
     "subnet the kernels' addresses come from (host-local IPAM)"},
    {"agent.cni_bridge", CFG_STRING, &cni_bridge, "tessera-bridge", 0, 0, NULL, false, NULL,
     "CNI plugin attaching kernels to the bridge: tessera-bridge (beside tessera-agent), bridge "
     "(Debian's, with host-local, in agent.cni_bin_dir), or an absolute path"},
    {"agent.cni_portmap", CFG_STRING, &cni_portmap, "tessera-portmap", 0, 0, NULL, false, NULL,
     "CNI plugin publishing service ports: tessera-portmap (beside tessera-agent), portmap "
     "(Debian's, in agent.cni_bin_dir), or an absolute path"},
    {"agent.cni_publish_addrs", CFG_STRING, &cni_publish_addrs, "", 0, 0, NULL, false, NULL,
     "host addresses (IPv4, comma-separated) where kernels' published ports answer (default: "
     "those of the advertised host; *: every address)"},
    {"agent.cni_publish_from", CFG_STRING, &cni_publish_from, "", 0, 0, NULL, false, NULL,
     "networks (CIDRs, comma-separated) that reach published ports from other hosts, e.g. the "
     "wsproxy hosts (default: any)"},
    {"agent.cni_host_ports", CFG_STRING, &cni_host_ports, "", 0, 0, NULL, false, NULL,
     "host ports kernels may reach on the host's addresses, e.g. udp/53,tcp/53 (default: none)"},
    {"agent.cni_deny", CFG_STRING, &cni_deny, "169.254.0.0/16", 0, 0, NULL, false, NULL,
     "networks (CIDRs, comma-separated) kernels never reach, e.g. management networks"},
    {"agent.cni_outbound", CFG_ENUM, &cni_outbound, "nat", 0, 0, "nat|routed|none", false, NULL,
     "kernels' traffic to other hosts: nat (masqueraded), routed (their own addresses) or none"},
    {"agent.cluster_vxlan_port", CFG_INT, &cluster_vxlan_port, "4789", 1, 65535, NULL, false, NULL,
     "UDP port of the VXLAN between the nodes that carries cluster sessions' networks (the same "
     "on every agent; only the nodes may reach it: docs/agent.md, \"The cluster network\")"},
    {"agent.port_range", CFG_STRING, &port_range, "30000-30999", 0, 0, NULL, false, NULL,
     "host ports for kernels' service ports, low-high"},
    {"agent.log_cap", CFG_BYTES, &log_cap, "10m", 4096, 1073741824.0, NULL, false, NULL,
     "console log kept per kernel (older output is dropped)"},
    {"agent.heartbeat_interval", CFG_DURATION, &heartbeat_interval_ms, "3s", 100, 600000, NULL,
     false, NULL, "AgentHeartbeat and KernelUsage period"},
    {"agent.mock_gpus", CFG_INT, &mock_gpus, "0", 0, 16, NULL, false, NULL,
     "declare this many mock GPUs instead of detecting real ones (tests, development)"},
    {"agent.mock_gpu_memory", CFG_BYTES, &mock_gpu_memory, "16g", 0, 1099511627776.0, NULL, false,
     NULL, "memory of each mock GPU"},
    {"agent.cuda_shim", CFG_BOOL, &cuda_shim, "true", 0, 0, NULL, false, NULL,
     "mount libtessera-cuda.so (memory cap, compute share) into kernels with GPUs"},
    {"agent.cuda_shim_path", CFG_STRING, &cuda_shim_path, TESSERA_SHIM_PATH, 0, 0, NULL, false,
     NULL, "libtessera-cuda.so on this host (checked at start when the node has GPUs)"},
    {"agent.cuda_driver_libs", CFG_STRING, &cuda_driver_libs, "", 0, 0, NULL, false, NULL,
     "driver libraries mounted into GPU kernels: sonames (ldconfig -p) or paths, comma-separated"
     " (empty: libcuda, libnvidia-ml and the few CUDA needs)"},
    {"agent.nvml_library", CFG_STRING, &nvml_library, "libnvidia-ml.so.1", 0, 0, NULL, false, NULL,
     "NVML library for the kernels' GPU utilisation in usage samples (a soname or a path;"
     " empty: none); absent or failing: utilisation is not measured"},
    {"agent.insecure_registries", CFG_STRING, &insecure_registries, "", 0, 0, NULL, false, NULL,
     "image registries (host:port, comma-separated) reached over plain HTTP"},
    {"agent.registry_ca_file", CFG_STRING, &registry_ca_file, "", 0, 0, NULL, false, NULL,
     "PEM file of the CA(s) that https:// image registries' certificates are checked against "
     "(a registry with a certificate of the cluster's own CA); empty = the system's"},
    {"agent.registry_auth_file", CFG_STRING, &registry_auth_file, "", 0, 0, NULL, false, NULL,
     "Docker-style config.json with registry credentials (none if empty)"},
    {"agent.max_parallel_pulls", CFG_INT, &max_parallel_pulls, "2", 1, 64, NULL, false, NULL,
     "image pulls run at once (more wait)"},
    {"agent.pull_retries", CFG_INT, &pull_retries, "3", 0, 20, NULL, false, NULL,
     "retries of a failing registry request (backoff from 250 ms, doubling)"},
    {"agent.pull_timeout", CFG_DURATION, &pull_timeout_ms, "30s", 1000, 600000, NULL, false, NULL,
     "registry connect timeout, and the longest a transfer may stall"},
    {"agent.cpu", CFG_DOUBLE, &cpu, "0", 0, 4096, NULL, false, NULL,
     "cpu cores offered to kernels (0: every online core)"},
    {"agent.mem", CFG_BYTES, &mem, "0", 0, 1125899906842624.0, NULL, false, NULL,
     "memory offered to kernels (0: host memory minus agent.mem_reserve)"},
    {"agent.mem_reserve", CFG_BYTES, &mem_reserve, "1g", 0, 1125899906842624.0, NULL, false, NULL,
     "memory kept for the host when agent.mem is 0"},
    {"agent.shm", CFG_BYTES, &shm, "64m", 0, 1099511627776.0, NULL, false, NULL,
     "/dev/shm size of each kernel (counts against its memory limit)"},
    {"agent.rootfs_size", CFG_BYTES, &rootfs_size, "32g", 0, 1125899906842624.0, NULL, false, NULL,
     "the most a kernel may write on this node (root file system changes and /home/work) when "
     "its owner's policy sets no max_rootfs_size; 0: no limit. Enforced with a file system of "
     "that size per kernel (a sparse file, ext4, on a loop device)"},
    {"agent.destroy_grace", CFG_DURATION, &destroy_grace_ms, "2s", 0, 600000, NULL, false, NULL,
     "SIGTERM to SIGKILL grace of DestroyKernel when the command gives none"},
    {"agent.destroy_on_stop", CFG_BOOL, &destroy_on_stop, "false", 0, 0, NULL, false, NULL,
     "destroy every kernel on a graceful stop (development stacks); off: kernels outlive agent "
     "restarts"},
    {"agent.exited_retention", CFG_DURATION, &exited_retention_ms, "10m", 0, 604800000.0, NULL,
     false, NULL,
     "an exited kernel (logs readable) not destroyed by then is destroyed by the agent (0: never)"},
    {"agent.exec_timeout", CFG_DURATION, &exec_timeout_ms, "60s", 100, 3600000, NULL, false, NULL,
     "the longest an execute request may run (requests may ask for less)"},
    {"agent.exec_output_cap", CFG_BYTES, &exec_output_cap, "1m", 1024, 268435456.0, NULL, false,
     NULL, "stdout and stderr kept per execute, each (the rest is dropped)"},
    {"agent.term_path", CFG_STRING, &term_path, "", 0, 0, NULL, false, NULL,
     "tessera-term, mounted read-only into every kernel for the ttyd app (default: next to "
     "tessera-agent)"},
    {"agent.userns", CFG_ENUM, &userns, "auto", 0, 0, "auto|on|off", false, NULL,
     "a user namespace per kernel, its root an unprivileged host user (auto: when the kernel "
     "has them; off: kernels run as the image's work user without capabilities)"},
    {"agent.userns_base", CFG_INT, &userns_base, "100000", 1, 4294901759.0, NULL, false, NULL,
     "host uid and gid of the kernels' root; ids up to base+size-1 must belong to no host user"},
    {"agent.userns_size", CFG_INT, &userns_size, "65536", 1, 4294967294.0, NULL, false, NULL,
     "container ids mapped (0..size-1); a new mapping unpacks the image layers again"},
    {NULL},
};

static bool agent_routes(svc *s, ts_err *err)
{
    if (!oci_client_set_ca_file(registry_ca_file, err)) return false;
    agent_config c = {
        .id = id,
        .resource_group = resource_group,
        .state_dir = state_dir,
        .runc = runc_path,
        .cni_bin_dir = cni_bin_dir,
        .cni_network = cni_network,
        .cni_subnet = cni_subnet,
        .cni_portmap = cni_portmap,
        .cni_bridge = cni_bridge,
        .cni_publish_addrs = cni_publish_addrs,
        .cni_publish_from = cni_publish_from,
        .cni_host_ports = cni_host_ports,
        .cni_deny = cni_deny,
        .cni_outbound = cni_outbound,
        .port_range = port_range,
        .insecure_registries = insecure_registries,
        .registry_auth_file = registry_auth_file,
        .advertise_addr = advertise_addr,
        .http_tls = svc_http_tls(s),
        .log_cap = log_cap,
        .heartbeat_interval_ms = heartbeat_interval_ms,
        .mock_gpus = mock_gpus,
        .mock_gpu_memory = mock_gpu_memory,
        .max_parallel_pulls = max_parallel_pulls,
        .pull_retries = pull_retries,
        .pull_timeout_ms = pull_timeout_ms,
        .cpu = cpu,
        .mem = mem,
        .mem_reserve = mem_reserve,
        .shm = shm,
        .rootfs_size = rootfs_size,
        .cluster_vxlan_port = (int)cluster_vxlan_port,
        .destroy_grace_ms = destroy_grace_ms,
        .exited_retention_ms = exited_retention_ms,
        .destroy_on_stop = destroy_on_stop,
        .exec_timeout_ms = exec_timeout_ms,
        .exec_output_cap = exec_output_cap,
        .cuda_shim = cuda_shim,
        .cuda_shim_path = cuda_shim_path,
        .cuda_driver_libs = cuda_driver_libs,
        .nvml_library = nvml_library,
        .term_path = term_path,
        .userns = userns,
        .userns_base = userns_base,
        .userns_size = userns_size,
    };
    return agent_setup(s, &c, err);
}

/* Only the registry drives an agent (docs/internal-api.md). */
static const svcauth_rule AGENT_ACCESS[] = {
    {"*", "/v1/kernels", SVCAUTH_REGISTRY},
    {"GET", "/v1/agent", SVCAUTH_REGISTRY},
};

int main(int argc, char **argv)
{
    static const svc_spec spec = {
        .name = "agent",
        .summary = "runs kernels as OCI containers on this node and reports its capacity",
        .default_listen = "127.0.0.1:8094",
        .needs = SVC_NEEDS_KAFKA,
        .options = agent_options,
        .routes = agent_routes,
        .start = agent_start,
        .stop = agent_stop,
        .access = AGENT_ACCESS,
        .n_access = TS_ARRAY_LEN(AGENT_ACCESS),
    };
    return svc_main(argc, argv, &spec);
}
