/* mounts.h: vfolder mounts of sessions (docs/sessions.md "Mounts").
 *
 * At create, the requested names and mount_map are resolved by
 * tessera-vfolder's POST /v1/mounts/resolve (vfolder.url) for the session's
 * owner; the answer (vfolder_id, name, host, host_path, mount_path,
 * permission) is what registry.sessions.mounts stores and CreateKernel
 * carries, at the first start and at every restart.
 *
 *   GET /v1/vfolder-mounts/{vfolder_id}   the live sessions that mount a folder
 *                                         (asked by tessera-vfolder before a delete) */
#ifndef REGISTRY_MOUNTS_H
#define REGISTRY_MOUNTS_H

#include "libcommon/svc.h"

/* config.mounts / config.mount_map of a create, checked: mounts a list of
 * distinct non-empty names, mount_map an object whose keys are among them.
 * *names and *map are new references (an empty list / object when absent).
 * False after a 400 problem naming the field. */
bool mounts_parse(json_t *config, json_t **names, json_t **map, http_resp *resp) TS_MUST_CHECK;

/* Resolve names (non-empty) for access_key. True with *out (caller-owned
 * array); false after a problem answer: vfolder's 400 / 403 / 404 relayed
 * with its msg and the `vfolder` member naming the folder, 503 when
 * tessera-vfolder does not answer in vfolder.timeout or fails. */
bool mounts_resolve(const char *access_key, json_t *names, json_t *map, const char *request_id,
                    json_t **out, http_resp *resp) TS_MUST_CHECK;

void mounts_routes(svc *s);

#endif
