/* mount_guard.h: a folder mounted in a live session is not moved to the
 * trash. tessera-vfolder keeps no copy of sessions: before a delete it asks
 * tessera-registry (registry.url), which stores every session's resolved
 * mounts, `GET /v1/vfolder-mounts/{vfolder_id}` (docs/internal-api.md). */
#ifndef VFOLDER_MOUNT_GUARD_H
#define VFOLDER_MOUNT_GUARD_H

#include "libcommon/http.h"

/* True when no live session mounts folder id (or registry.url is empty).
 * False after a problem answer: 409 `vfolder-in-use` naming the sessions
 * (also listed in a `sessions` member), 503 when tessera-registry does not
 * answer in registry.timeout or fails. */
bool vf_mount_guard_free(const char *id, const char *name, const char *request_id,
                         http_resp *resp) TS_MUST_CHECK;

#endif
