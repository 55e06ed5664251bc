/* node.h: what this node offers: cpu cores and memory from the host, GPUs
 * through the CUDA driver API (libcuda.so.1 loaded with dlopen: a node without
 * it simply has no GPUs), or mock GPUs declared in the config for machines
 * without one. Also the node-level usage figures that heartbeats carry. */
#ifndef AGENT_NODE_H
#define AGENT_NODE_H

#include "libcommon/slots.h"

#define NODE_MAX_DEVICES 16

typedef struct node_device {
    char id[16];     /* agent-local id: the CUDA ordinal as text, "0" */
    char model[128]; /* "NVIDIA H100 80GB HBM3", "mock" */
    char bus_id[32]; /* PCI bus id, "" when unknown or mock */
    /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx": the driver's (cuDeviceGetUuid),
     * or for a mock device one derived from the agent id and the index (stable
     * across restarts); "" when the driver does not say. */
    char uuid[48];
    int64_t memory_bytes;
    bool mock;
} node_device;

typedef struct node_opts {
    int64_t cpu_override_milli; /* 0: every online core */
    int64_t mem_override_bytes; /* 0: host memory minus mem_reserve_bytes */
    int64_t mem_reserve_bytes;  /* kept for the host when mem is not overridden */
    int mock_gpus;              /* > 0: this many mock devices instead of real ones */
    int64_t mock_gpu_memory;    /* bytes per mock device */
    const char *agent_id;       /* seeds the mock devices' UUIDs */
} node_opts;

typedef struct node_info {
    char hostname[256];
    char architecture[32];  /* uname machine: "x86_64" */
    int host_cpus;          /* online cores */
    int64_t host_mem_bytes; /* MemTotal */
    slots_t capacity;       /* cpu, mem, cuda.device, cuda.shares (when GPUs) */
    node_device devices[NODE_MAX_DEVICES];
    int n_devices;
    char gpu_note[160]; /* why no GPUs were found ("libcuda.so.1 not found") */
} node_info;

/* "GPU-" and the 16 bytes as 8-4-4-4-12 lower-case hex (NVML's and
 * nvidia-smi's form); out needs 41 bytes. */
void node_format_uuid(const unsigned char bytes[16], char *out, size_t n);

/* Detect the node's resources. Fails only on a broken host (no /proc). */
bool node_detect(const node_opts *opts, node_info *out, ts_err *err) TS_MUST_CHECK;

/* Node usage for heartbeats: cpu percent since the previous call (0 on the
 * first), memory in use / total, free bytes on the file system of path, load1. */
typedef struct node_usage {
    double cpu_util_pct;
    int64_t mem_used_bytes;
    int64_t mem_total_bytes;
    int64_t disk_free_bytes;
    double load1;
} node_usage;
void node_usage_sample(const char *path, node_usage *out);

#endif
