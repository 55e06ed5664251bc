/* mounts.h: mount resolution for tessera-registry, at session creation
 * (docs/vfolders.md "Mounts", docs/internal-api.md):
 *
 *   POST /v1/mounts/resolve {access_key, names: [name or id], mount_map}
 *     -> [{vfolder_id, name, host, host_path, mount_path, permission}]
 *
 * as the session owner (its access key) sees each folder: its own, shared
 * with it, or its projects' (not through admin rights alone), on a host its
 * policies allow mounting from. A mount path is /home/work/<name>, or the
 * mount_map's (under /home/work, never over a home directory file a session
 * needs); two mounts never share or nest their paths. wd mounts read-write.
 * A refusal (400, 403, 404) names the folder in a `vfolder` member. */
#ifndef VFOLDER_MOUNTS_H
#define VFOLDER_MOUNTS_H

#include "libcommon/svc.h"

void vf_h_mounts_resolve(http_req *req, http_resp *resp, void *ctx);

#endif
