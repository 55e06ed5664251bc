/* resource_presets.h: resource presets, named slot amounts the launcher
 * offers (Backend.AI's resource_presets; table registry.resource_presets,
 * migration 0006, seeded with cpu1-mem1g, cpu2-mem4g, cpu4-mem8g, gpu1,
 * gpu-half). Any authenticated caller reads; only superadmins write.
 *
 *   GET    /v1/resource/presets
 *          {"presets": [P...], "resource_presets": [P...]} (the same list under
 *          Backend.AI's key and the console's), P = {"name", "resource_slots":
 *          {slot: "decimal text"}, "shared_memory": null | "bytes"}
 *   GET    /v1/admin/resource-presets?limit=&offset=     paged {"items", "total", ...}
 *   GET    /v1/admin/resource-presets/{name}
 *   POST   /v1/admin/resource-presets  {"name", "resource_slots", "shared_memory"?}  201
 *   PATCH  /v1/admin/resource-presets/{name}  {"resource_slots"?, "shared_memory"?}
 *          (shared_memory null clears it)
 *   DELETE /v1/admin/resource-presets/{name}  {"deleted": true}
 * Admin rows: {"name", "resource_slots", "shared_memory", "created_at"}.
 * Names as resource groups' (1-64 letters, digits, '-', '_', '.', not first);
 * resource_slots: a non-empty object of known slots with amounts as the
 * session API takes them ("1g", 2, "0.5"), stored normalized; shared_memory:
 * bytes (an integer or text with a unit), at most the preset's mem. Bad input:
 * 400 and nothing changed; an existing name 409; an unknown one 404. */
#ifndef REGISTRY_RESOURCE_PRESETS_H
#define REGISTRY_RESOURCE_PRESETS_H

#include "libcommon/svc.h"

#include <jansson.h>

void resource_presets_routes(svc *s);

/* Every preset, ordered by name, as {"name", "resource_slots", "shared_memory"}
 * (check_presets.c adds "allocatable"); NULL after a problem answer. */
json_t *resource_presets_all(PGconn *conn, http_resp *resp);

#endif
