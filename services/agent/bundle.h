/* bundle.h: the OCI runtime spec (config.json) of a kernel.
 *
 * What goes in (see docs/agent.md for the reasons):
 *   process    args from the spec, else the image's entrypoint+cmd, else (an
 *              interactive kernel) a keep-alive; env = defaults < image <
 *              TESSERA_/BACKENDAI_ ids < spec env; cwd = image workdir or
 *              /home/work; user: bundle_process_user; noNewPrivileges;
 *              capabilities: bundle_caps with a user namespace, none without;
 *              rlimits.
 *   mounts     proc, /dev tmpfs, devpts, /dev/shm (shm_bytes), mqueue, sysfs
 *              ro, cgroup ro, /etc/{hosts,hostname,resolv.conf}, /home/work,
 *              /home/config (read-only; a cluster session's SSH keypair),
 *              the spec's bind mounts (nosuid,nodev; ro where asked).
 *   linux      namespaces pid, ipc, uts, mount, network (the CNI netns path),
 *              with userns: user (the path the agent made, userns.h), uid and
 *              gid mappings 0 -> base, size ids;
 *              resources cpu quota/period, memory (swap = limit: no swap),
 *              pids; cgroupsPath /tessera/<id>; devices deny all (runc adds
 *              the standard ones); Docker's masked and read-only paths; the
 *              default seccomp profile (seccomp.h); sysctl
 *              net.ipv4.ping_group_range = every group of the kernel (ping
 *              through ICMP datagram sockets, without CAP_NET_RAW).
 *   gpu        a kernel with a GPU allocation: gpu_mounts.h (shim, devices). */
#ifndef AGENT_BUNDLE_H
#define AGENT_BUNDLE_H

#include "container.h"
#include "userns.h"

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
    const char *config_dir;   /* host dir mounted read-only at /home/config; NULL: none */
    const userns_map *userns; /* the containers' user namespace; NULL: none */
    const char *userns_path;  /* the kernel's user namespace (userns_ns_create) */
} bundle_params;

/* Write <bundle_dir>/config.json. */
bool bundle_write(const char *bundle_dir, const bundle_params *p, ts_err *err) TS_MUST_CHECK;

/* Whether the kernel's init is the runtime's keep-alive (an interactive
 * kernel with no command of its own or in its image). */
bool bundle_uses_keepalive(const kernel_spec *spec) TS_MUST_CHECK;

/* The capabilities of a kernel with a user namespace (NULL-terminated), in
 * its bounding, effective and permitted sets, and their mask as
 * /proc/<pid>/status shows it: what a workload needs to be root in its own
 * container (chown, file permissions, set ids, signals, ports below 1024,
 * chroot). Not NET_RAW, MKNOD, SYS_ADMIN, AUDIT_WRITE, SETFCAP. Inheritable
 * and ambient are empty; without a user namespace every set is empty. */
extern const char *const bundle_caps[];
uint64_t bundle_caps_mask(void);

/* The uid and gid inside the container the kernel's processes run as, from
 * the image's user (resolved in its rootfs; see bundle_resolve_user).
 * With a user namespace: that user (root when the image names none), which
 * must lie inside the mapping. Without one, never root: the image's user
 * when neither its uid nor gid is 0, else `work` of the image's /etc/passwd
 * (uid 1000 in Backend.AI images) when that is not root, else 1000:1000. */
bool bundle_process_user(const char *rootfs, const image_info *image, const userns_map *userns,
                         uid_t *uid, gid_t *gid, ts_err *err) TS_MUST_CHECK;
#define BUNDLE_WORK_UID 1000

/* Resolve "user", "uid", "user:group", "uid:gid" against <rootfs>/etc/passwd and
 * /etc/group (read without leaving the rootfs). NULL or "" is root. */
bool bundle_resolve_user(const char *rootfs, const char *user, uid_t *uid, gid_t *gid,
                         ts_err *err) TS_MUST_CHECK;

/* Open path inside rootfs the way the container would see it (symlinks
 * resolved within rootfs) into *fd; false when it is absent. */
bool bundle_open_in_root(const char *rootfs, const char *path, int flags, int *fd) TS_MUST_CHECK;

#endif
