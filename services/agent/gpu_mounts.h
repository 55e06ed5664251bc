/* gpu_mounts.h: how a kernel with a GPU allocation gets its GPUs and the CUDA
 * shim (docs/cuda-shim.md, "How the shim reaches a container").
 *
 * The host side is set up once at start (gpu_host_init): the shim library
 * (agent.cuda_shim_path, checked there), the NVIDIA device nodes when the host
 * has them (/dev/nvidiactl present; mock GPUs have none), the minor number of
 * each GPU (/proc/driver/nvidia/gpus/<bus-id>/information) and the driver's
 * user-space libraries (agent.cuda_driver_libs, resolved with `ldconfig -p`).
 *
 * Per kernel, in <state>/gpu/<kernel-id>/:
 *   cuda-shim.conf  gpu_shim_conf_write: mem_limit, compute_share, shared_dir,
 *                   and visible_uuids, the allocated GPUs' UUIDs in the order of
 *                   the container's CUDA ordinals (the shim filters NVML by it)
 *   ld.so.preload   one line, the shim's path in the container
 *   shared/         the container's accounting directory (the shim's region)
 * and in its config.json (gpu_bundle_apply, called by bundle.c):
 *   mounts   the shim at GPU_SHIM_PATH, ld.so.preload at /etc/ld.so.preload,
 *            cuda-shim.conf at GPU_CONF_PATH (all read-only), shared/ at
 *            GPU_SHARED_DIR (read-write); with device nodes, the driver
 *            libraries read-only at their host paths
 *   linux    with device nodes: nvidiactl, nvidia-uvm, nvidia-uvm-tools (when
 *            present) and nvidiaN of the allocated GPUs only, as devices and
 *            as allow rules after the deny-all; CUDA_VISIBLE_DEVICES then
 *            numbers the container's GPUs 0..n-1 (the driver enumerates only
 *            the nodes it can open). A kernel with a user namespace (its
 *            config has uidMappings) cannot mknod: there the same host
 *            nodes are bind-mounted at /dev/<name> instead (no nodev), and
 *            the allow rules are the same.
 * With agent.cuda_shim off: devices and libraries only. */
#ifndef AGENT_GPU_MOUNTS_H
#define AGENT_GPU_MOUNTS_H

#include <jansson.h>

#include "services/agent/node.h"

#define GPU_SHIM_PATH "/opt/tessera/lib/libtessera-cuda.so"
#define GPU_CONF_PATH "/etc/tessera/cuda-shim.conf" /* read first by the shim */
#define GPU_SHARED_DIR "/run/tessera-cuda"
#define GPU_MAX_DRIVER_LIBS 32

/* The sonames mounted when agent.cuda_driver_libs is empty. */
#define GPU_DEFAULT_DRIVER_LIBS                                                                    \
    "libcuda.so.1,libnvidia-ml.so.1,libnvidia-ptxjitcompiler.so.1,libnvidia-nvvm.so.4,"            \
    "libnvidia-gpucomp.so,libcudadebugger.so.1"

typedef struct gpu_host_opts {
    bool shim;                 /* agent.cuda_shim */
    const char *shim_path;     /* agent.cuda_shim_path */
    const char *driver_libs;   /* agent.cuda_driver_libs: sonames or absolute paths, "" = default */
    const char *dev_dir;       /* NULL = "/dev" (tests point elsewhere) */
    const char *proc_gpus_dir; /* NULL = "/proc/driver/nvidia/gpus" */
    const char *ldconfig;      /* NULL = "ldconfig" (ldconfig -p resolves sonames) */
    const node_device *devices;
    int n_devices;
} gpu_host_opts;

typedef struct gpu_host {
    bool shim;
    char *shim_path;
    char *dev_dir;
    bool has_nodes; /* <dev_dir>/nvidiactl is a character device */
    char *device_ids[NODE_MAX_DEVICES];
    char *uuids[NODE_MAX_DEVICES]; /* "" when the driver did not say */
    int minors[NODE_MAX_DEVICES];  /* /dev/nvidia<minor> of each device */
    int n_devices;
    char *driver_libs[GPU_MAX_DRIVER_LIBS]; /* host paths */
    int n_driver_libs;
} gpu_host;

/* Fails (saying which key) on a relative or unusable shim path when the shim
 * is on and the node has GPUs; a node without GPUs checks nothing. */
bool gpu_host_init(gpu_host *h, const gpu_host_opts *o, ts_err *err) TS_MUST_CHECK;
void gpu_host_free(gpu_host *h);

/* The UUID of one of this agent's devices; NULL for an unknown id or a device
 * without one. */
const char *gpu_host_uuid(const gpu_host *h, const char *device_id);

/* One kernel's cuda-shim.conf (docs/cuda-shim.md, "Configuration"). */
typedef struct gpu_shim_conf {
    const char *kernel_id;
    const char *mem_limit; /* "0:<bytes>,1:<bytes>" by container ordinal; "" = no cap */
    double compute_share;
    /* the allocated GPUs' UUIDs, index = the container's CUDA ordinal; a NULL or
     * empty one leaves visible_uuids out (NVML then unfiltered, not a GPU short) */
    const char *uuids[NODE_MAX_DEVICES];
    int n_uuids;
} gpu_shim_conf;

bool gpu_shim_conf_write(const char *path, const gpu_shim_conf *c, ts_err *err) TS_MUST_CHECK;

/* What one kernel's bundle needs (points into h and kernel_dir). */
typedef struct kernel_gpu {
    const gpu_host *host;
    char kernel_dir[512]; /* <state>/gpu/<kernel-id> */
    int minors[NODE_MAX_DEVICES];
    int n_minors;
} kernel_gpu;

/* Write ld.so.preload and make shared/ in kernel_dir (cuda-shim.conf is
 * already there), and map the allocated device ids to their minors. Fails on
 * an unknown device id or a shim file gone since start. */
bool gpu_kernel_prepare(const gpu_host *h, const char *kernel_dir, const char *const *device_ids,
                        int n_ids, kernel_gpu *out, ts_err *err) TS_MUST_CHECK;
/* Remove kernel_dir and what the agent and the shim put in it. */
void gpu_kernel_cleanup(const char *kernel_dir);

/* Add the kernel's GPU mounts, devices, device rules and env to an OCI config. */
bool gpu_bundle_apply(const kernel_gpu *g, json_t *config, ts_err *err) TS_MUST_CHECK;

#endif
