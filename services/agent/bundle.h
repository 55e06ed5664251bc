/* bundle.h: the OCI runtime spec (config.json) of a kernel.
 *
 * What goes in (see docs/agent.md for the reasons):
 *   process    args from the spec, else the image's entrypoint+cmd, else (an
 *              interactive kernel) a keep-alive; env = defaults < image <
 *              TESSERA_/BACKENDAI_ ids < spec env; cwd = image workdir or
 *              /home/work; user from the image (numeric or from its
 *              /etc/passwd), else root; noNewPrivileges; Docker's default
 *              capabilities; rlimits.
 *   mounts     proc, /dev tmpfs, devpts, /dev/shm (shm_bytes), mqueue, sysfs ro,
 *              cgroup ro, /etc/{hosts,hostname,resolv.conf}, /home/work, the
 *              spec's bind mounts (nosuid,nodev; ro where asked).
 *   linux      namespaces pid, ipc, uts, mount, network (the CNI netns path),
 *              no user namespace; resources cpu quota/period, memory (swap =
 *              limit: no swap), pids; cgroupsPath /tessera/<id>; devices deny
 *              all (runc adds the standard ones); Docker's masked and read-only
 *              paths; the default seccomp profile.
 *   gpu        a kernel with a GPU allocation: gpu_mounts.h (shim, devices). */
#ifndef AGENT_BUNDLE_H
#define AGENT_BUNDLE_H

#include "container.h"

#include <jansson.h>
#include <sys/types.h>

#define BUNDLE_DEFAULT_PIDS 4096
#define BUNDLE_CPU_PERIOD 100000

typedef struct bundle_params {
    const kernel_spec *spec;
    const char *rootfs;       /* the mounted overlay (to resolve user, shell) */
    const char *netns_path;   /* /run/netns/tessera-<id> */
    const char *cgroups_path; /* /tessera/<id> */
    const char *home_dir;     /* host dir mounted at /home/work */
    const char *etc_dir;      /* host dir with hosts, hostname, resolv.conf */
} bundle_params;

/* Write <bundle_dir>/config.json. */
bool bundle_write(const char *bundle_dir, const bundle_params *p, ts_err *err) TS_MUST_CHECK;

/* Whether the kernel's init is the runtime's keep-alive (an interactive
 * kernel with no command of its own or in its image). */
bool bundle_uses_keepalive(const kernel_spec *spec);

/* The docker default capability names (NULL-terminated) and their CapEff mask. */
extern const char *const bundle_caps[];
uint64_t bundle_caps_mask(void);

/* Resolve "user", "uid", "user:group", "uid:gid" against <rootfs>/etc/passwd and
 * /etc/group (read without leaving the rootfs). NULL or "" is root. */
bool bundle_resolve_user(const char *rootfs, const char *user, uid_t *uid, gid_t *gid,
                         ts_err *err) TS_MUST_CHECK;

/* Open path inside rootfs the way the container would see it (symlinks
 * resolved within rootfs); -1 when absent. */
int bundle_open_in_root(const char *rootfs, const char *path, int flags);

/* Set KEY=value in an OCI process.env array: replaces an entry of the same key
 * in place (order of first appearance kept), else appends; no '=' or an empty
 * key: ignored. */
void bundle_env_put(json_t *env, const char *kv);

#endif
