/* userns.h: the user namespace of the agent's containers (docs/agent.md,
 * "Least privilege").
 *
 * One mapping shared by every container of the node, as Docker's
 * userns-remap: container ids 0..size-1 are host ids base..base+size-1, so
 * root in a container is an unprivileged host user. runc 1.1 cannot idmap a
 * mount, so the image layers are unpacked with their owners shifted by base
 * (a layer cache per mapping, image.h), and what the agent makes for a
 * container (overlay upper dir, /home/work, the /etc files) is owned by the
 * mapped ids.
 *
 * Each kernel's user namespace is made by the agent together with its
 * network namespace (userns_ns_create), before CNI configures the network:
 * the network namespace then belongs to the user namespace, so runc can
 * enter it again for `runc exec` (runc 1.1 joins the user namespace first,
 * and from there may only enter namespaces that belong to it), the
 * container gets a sysfs of its own, and CAP_NET_BIND_SERVICE counts there.
 * runc joins both by path (config.json linux.namespaces).
 *
 * runc sets the container's mounts up from inside the new user namespace,
 * as the mapped root: every bind-mount source must be reachable by host uid
 * `base`. The agent's own directories on those paths are root:<base> 0710
 * (userns_share_dir); a source outside them that the mapped root cannot
 * reach is staged (userns_stage_bind).
 *
 * Off (agent.userns = off, or auto on a kernel without user namespaces):
 * no user namespace, and the user's processes run as the image's work user
 * with no capabilities (bundle.h). */
#ifndef AGENT_USERNS_H
#define AGENT_USERNS_H

#include "libcommon/common.h"

#include <sys/types.h>

#define USERNS_DEFAULT_BASE 100000u
#define USERNS_DEFAULT_SIZE 65536u

typedef struct userns_map {
    uint32_t base; /* host uid and gid of the container's 0 */
    uint32_t size; /* ids mapped: 0..size-1 */
} userns_map;

/* Whether this kernel lets runc create user namespaces; why not in why. */
bool userns_supported(char *why, size_t size) TS_MUST_CHECK;

/* agent.userns (auto | on | off), agent.userns_base, agent.userns_size ->
 * *on and the mapping. auto: on when the kernel supports it; on without
 * kernel support, a mapping past 2^32 - 1 or one that holds host id 0 are
 * errors. */
bool userns_configure(const char *mode, int64_t base, int64_t size, bool *on, userns_map *out,
                      ts_err *err) TS_MUST_CHECK;

/* The host id of container id `id` (NULL: no user namespace, id itself). */
uint32_t userns_host_id(const userns_map *m, uint32_t id);

/* chown path (not following a symlink) to the host ids of container ids
 * uid:gid, then chmod mode. */
bool userns_own(const userns_map *m, const char *path, uint32_t uid, uint32_t gid, mode_t mode,
                ts_err *err) TS_MUST_CHECK;

/* A directory on the way to what runc mounts: root:<base gid> 0710, so the
 * containers' root may pass and other host users may not (m NULL: left as
 * it is). */
bool userns_share_dir(const userns_map *m, const char *path, ts_err *err) TS_MUST_CHECK;

/* Whether host uid base (gid base, no supplementary groups) can reach path:
 * search permission on every directory above it. When not, why names the
 * first directory in the way. */
bool userns_reachable(const userns_map *m, const char *path, char *why, size_t size) TS_MUST_CHECK;

/* A new user namespace with the mapping and a new network namespace that
 * belongs to it (loopback up), kept by bind mounts on userns_path and
 * netns_path (both created here; netns_path as cni.h's, in /run/netns).
 * A short-lived child of the calling process makes them. */
bool userns_ns_create(const userns_map *m, const char *userns_path, const char *netns_path,
                      ts_err *err) TS_MUST_CHECK;

/* Unmount and remove userns_path; a path already gone is fine. */
bool userns_ns_delete(const char *userns_path, ts_err *err) TS_MUST_CHECK;

/* Make the directory or file src reachable for the mapped root: bind it
 * (recursively, private) at stage_path, created here as a directory or an
 * empty file like src. The container keeps its own copy of the mount, so
 * the stage can go as soon as the container runs (userns_unstage). */
bool userns_stage_bind(const char *src, const char *stage_path, ts_err *err) TS_MUST_CHECK;

/* Detach every mount staged below stage_dir and remove the stage entries;
 * true when none is left. */
bool userns_unstage(const char *stage_dir) TS_MUST_CHECK;

#endif
