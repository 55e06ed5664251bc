/* agent.h: the agent as a whole. Set-up (node resources, runtime, image
 * stores, kernels), start (re-adoption, AgentStarted, the command consumer on
 * tessera.agent.cmd.<agent-id>, heartbeats), command dispatch, and stop
 * (AgentStopped). main.c holds the option table and fills agent_config. */
#ifndef AGENT_AGENT_H
#define AGENT_AGENT_H

#include "libcommon/svc.h"
#include "services/agent/container.h"
#include "services/agent/kernels.h"
#include "services/agent/node.h"

typedef struct agent_config {
    const char *id; /* "" = the host name */
    const char *resource_group;
    const char *state_dir;
    const char *runc;
    const char *cni_bin_dir;
    const char *cni_network;
    const char *cni_subnet;
    const char *cni_portmap;         /* "tessera-portmap", "portmap" (in cni_bin_dir) or a path */
    const char *cni_bridge;          /* "tessera-bridge", "bridge" (in cni_bin_dir) or a path */
    const char *cni_publish_addrs;   /* "" = the kernel host's addresses, "*" = every address */
    const char *cni_publish_from;    /* CIDRs that reach published ports, "" = any */
    const char *cni_host_ports;      /* "udp/53,tcp/53": host ports kernels may reach */
    const char *cni_deny;            /* CIDRs kernels never reach */
    const char *cni_outbound;        /* nat, routed or none */
    const char *port_range;          /* "30000-30999" */
    const char *insecure_registries; /* "host:port,host:port" reached over plain HTTP */
    const char *registry_auth_file;  /* Docker-style config.json, or "" */
    const char *advertise_addr;      /* "host:port" of the HTTP API; "" = as bound */
    bool http_tls;                   /* http.listen serves TLS: advertised as https:// */
    int64_t log_cap;
    int64_t heartbeat_interval_ms;
    int64_t mock_gpus;
    int64_t mock_gpu_memory;
    int64_t max_parallel_pulls;
    int64_t pull_retries;
    int64_t pull_timeout_ms;
    double cpu;  /* 0 = every core */
    int64_t mem; /* 0 = host memory minus mem_reserve */
    int64_t mem_reserve;
    int64_t shm;
    int64_t rootfs_size;    /* a kernel's disk when its CreateKernel names none; 0 = no limit */
    int cluster_vxlan_port; /* UDP port of cluster sessions' VXLAN (cni_cluster.h) */
    int64_t destroy_grace_ms;
    int64_t exited_retention_ms;
    bool destroy_on_stop;         /* destroy every kernel on a graceful stop (dev stacks) */
    int64_t exec_timeout_ms;      /* the longest an execute may run */
    int64_t exec_output_cap;      /* bytes kept per stream */
    bool cuda_shim;               /* mount libtessera-cuda.so into GPU kernels */
    const char *cuda_shim_path;   /* the shim on this host */
    const char *cuda_driver_libs; /* sonames or paths, "" = GPU_DEFAULT_DRIVER_LIBS */
    const char *nvml_library;     /* dlopen'd for GPU utilisation; "" = none (gpu_nvml.h) */
    const char *term_path;        /* tessera-term on the host; "" = next to this program */
    const char *userns;           /* "auto", "on", "off" (userns.h) */
    int64_t userns_base;          /* host id of the containers' 0 */
    int64_t userns_size;          /* ids mapped */
} agent_config;

typedef struct agent agent;

/* svc hooks: routes creates the agent and its HTTP routes, start brings it up. */
bool agent_setup(svc *s, const agent_config *cfg, ts_err *err) TS_MUST_CHECK;
bool agent_start(svc *s, ts_err *err) TS_MUST_CHECK;
void agent_stop(svc *s);

#endif
