/* container.h: one kernel = one OCI container run by runc.
 *
 * Per kernel, under <state>/kernels/<kernel-id>/:
 *   bundle/config.json   the OCI runtime spec we write
 *   bundle/rootfs/       overlayfs: lowerdir = image layers, upperdir/workdir below
 *   disk/                upper/ work/ (overlay), home/ (/home/work), etc/: what
 *                        the container writes here (runtime_disk.h; a restart
 *                        keeps it, in <state>/kernels/.kept-<id>/)
 *   logs/output.log      container stdout+stderr, size-capped
 *   state.json           what the agent needs to re-adopt the kernel after a restart
 * The container gets a network namespace configured by CNI (bridge + host-local
 * + a port plugin, tessera-portmap by default); its service ports are
 * published on host ports from a pool. */
#ifndef AGENT_CONTAINER_H
#define AGENT_CONTAINER_H

#include "home_fs.h"
#include "image.h"
#include "libcommon/proc.h"
#include "userns.h"

typedef struct runtime runtime;

typedef struct runtime_opts {
    const char *state_dir;   /* agent.state_dir */
    const char *runc_path;   /* "runc" or a full path */
    const char *cni_bin_dir; /* "/usr/lib/cni" on Debian */
    const char *cni_network; /* bridge name / network name, e.g. "tessera0" */
    const char *cni_subnet;  /* "10.88.0.0/16"-style pool for host-local */
    const char *cni_portmap; /* path of the port plugin; NULL: <cni_bin_dir>/portmap */
    const char *cni_bridge;  /* path of the bridge plugin; NULL: <cni_bin_dir>/bridge */
    const char *sup_path;    /* tessera-sup; NULL: the one beside this program */
    /* tessera-bridge for cluster sessions' networks (cni_cluster.h); NULL:
     * cni_bridge when it is that, else the one beside this program */
    const char *cni_cluster_bridge;
    int vxlan_port;      /* UDP port of the cluster networks' VXLAN (0: 4789) */
    int port_pool_start; /* host ports for services: [start, end] */
    int port_pool_end;
    int64_t log_cap_bytes; /* per kernel */
    /* The containers' user namespace (userns.h); NULL: none, and kernels
     * run as the image's work user without capabilities (bundle.h). */
    const userns_map *userns;
} runtime_opts;

runtime *runtime_new(const runtime_opts *opts, ts_err *err);
void runtime_free(runtime *rt);

typedef struct bind_mount {
    const char *host_path;
    const char *container_path; /* "/home/work/<name>" */
    bool read_only;
} bind_mount;

/* A kernel of a session of several kernels: its second interface (eth1) on
 * the session's own network (cni_cluster.h), the names of the others in its
 * /etc/hosts, the session's SSH keypair at /home/config/ssh. */
typedef struct kernel_peer {
    const char *hostname; /* main1, sub1, ... */
    const char *address;  /* on the session's network, "a.b.c.d/len" */
} kernel_peer;

typedef struct kernel_cluster {
    uint32_t vni;               /* the session's network id (1 to 16777215) */
    const char *address;        /* this kernel's, "a.b.c.d/len" */
    const char *local;          /* this node's address for the overlay; NULL: no remotes */
    const char *const *remotes; /* the other nodes with kernels of the session */
    int n_remotes;
    const kernel_peer *peers; /* every kernel of the session, this one too */
    int n_peers;
    const char *ssh_private_key; /* /home/config/ssh/id_cluster (NULL: no keypair) */
    const char *ssh_public_key;  /* /home/config/ssh/id_cluster.pub */
} kernel_cluster;

typedef struct kernel_spec {
    const char *kernel_id;
    const char *session_id;
    const char *hostname;
    const image_info *image;
    double cpu_cores;       /* 0 = unlimited */
    int64_t mem_bytes;      /* 0 = unlimited */
    int64_t pids_max;       /* 0 = default */
    int64_t shm_bytes;      /* /dev/shm size */
    const char *const *env; /* extra "K=V", NULL-terminated (TESSERA_*, BACKENDAI_*) */
    const char *const *
        argv; /* startup command, or NULL: image entrypoint+cmd (or a keep-alive for interactive) */
    const bind_mount *mounts;
    int n_mounts;
    const int *service_ports; /* container ports to publish */
    int n_service_ports;
    bool batch;                    /* true: the command's exit ends the kernel */
    int cluster_size;              /* kernels of the session; <= 1: no peers to reach */
    const kernel_cluster *cluster; /* NULL: none (a kernel alone in its session) */
    /* the most the kernel may write on this node, its root file system's
     * changes and /home/work (runtime_disk.h); 0: no limit */
    int64_t disk_bytes;
    const struct kernel_gpu *gpu; /* GPU allocation (gpu_mounts.h), NULL for none */
    const char
        *term_path; /* host path of tessera-term, mounted read-only (term_app.h); NULL: none */
    const home_file *home_files; /* written into /home/work before it starts (home_fs_seed) */
    int n_home_files;
} kernel_spec;

typedef struct kernel_ports {
    int container_port;
    int host_port;
} kernel_ports;

typedef enum kernel_state {
    KERNEL_CREATING,
    KERNEL_RUNNING,
    KERNEL_EXITED, /* process ended; exit_code valid */
    KERNEL_GONE,   /* destroyed, nothing left */
} kernel_state;

typedef struct kernel_status {
    kernel_state state;
    int exit_code;
    bool oom_killed; /* the memory cgroup killed it */
    char reason[256];
    kernel_ports ports[16];
    int n_ports;
    char ip[64];
} kernel_status;

/* Create and start: runtime_start.h. SIGTERM, then SIGKILL after a grace,
 * and nothing left: runtime_destroy.h. */

/* Current state (cheap: runc state + cgroup events). */
bool runtime_status(runtime *rt, const char *kernel_id, kernel_status *out,
                    ts_err *err) TS_MUST_CHECK;
/* Run argv inside the kernel (runc exec), capturing stdout/stderr separately,
 * each capped at cap_bytes, killed after timeout_ms. */
bool runtime_exec(runtime *rt, const char *kernel_id, const char *const *argv,
                  const char *const *env, int timeout_ms, size_t cap_bytes, exec_result *out,
                  ts_err *err) TS_MUST_CHECK;

/* The host directory mounted at the kernel's /home/work (heap); it may not
 * exist (the kernel is not created yet, or gone). */
char *runtime_home_dir(runtime *rt, const char *kernel_id);

/* Whether a kernel's disk_bytes is enforced here (a loop device and
 * mkfs.ext4); false with why (kernels then get a disk without a limit). */
bool runtime_disk_limits(runtime *rt, char *why, size_t why_size) TS_MUST_CHECK;

/* Remove what a restart kept of the kernel (its disk) when no next
 * generation came for it (runtime_disk.h); nothing when there is none. */
void runtime_discard_kept(runtime *rt, const char *kernel_id);

/* Up to max bytes of the kernel's log (the tail when longer). */
char *runtime_logs(runtime *rt, const char *kernel_id, size_t max, size_t *len, ts_err *err);

/* Kernels this agent's state dir knows, for re-adoption after a restart:
 * *n ids in *ids (heap array of heap strings). False (err set, *n 0) when the
 * kernels' dir cannot be read. */
bool runtime_list(runtime *rt, char ***ids, int *n, ts_err *err) TS_MUST_CHECK;

/* Per-kernel usage from cgroups. */
typedef struct kernel_usage {
    int64_t cpu_usec;
    int64_t mem_bytes;
    int64_t mem_peak_bytes;
    int64_t pids;
    /* cumulative since the cgroup / veth was created; 0 when not measured */
    int64_t io_read_bytes, io_write_bytes; /* block I/O (io.stat, blkio) */
    int64_t net_rx_bytes, net_tx_bytes;    /* the kernel's side of its veth */
    int64_t started_ms;                    /* when its init process started, Unix ms; 0 unknown */
} kernel_usage;
bool runtime_usage(runtime *rt, const char *kernel_id, kernel_usage *out,
                   ts_err *err) TS_MUST_CHECK;
/* The host pids of the kernel's processes (its cgroup's cgroup.procs), at
 * most max; the number read, -1 when its cgroup is not there. */
int runtime_pids(runtime *rt, const char *kernel_id, int *pids, int max);
/* A small text file in the kernel's dir where usage.h keeps what it has
 * reported, so a restarted agent does not count it again ("usage.sent"):
 * write it (false when it cannot), read it (heap; NULL when there is none). */
bool runtime_usage_mark_save(runtime *rt, const char *kernel_id, const char *text) TS_MUST_CHECK;
char *runtime_usage_mark_load(runtime *rt, const char *kernel_id);

/* Node-wide: all kernels of this agent together (the /tessera parent cgroup);
 * zeros when none ever ran. For heartbeats next to the per-kernel figures. */
bool runtime_usage_total(runtime *rt, kernel_usage *out, ts_err *err) TS_MUST_CHECK;

#endif
