/* resources.h: the public resource API the launcher and the summary read
 * (api-compat.md "Auth, resources, config"; docs/api.md "Resources"),
 * forwarded to tessera-registry, which answers (services/registry/
 * scaling_groups.h, resource_presets.h, check_presets.h, config_store.h):
 *
 *   GET  /scaling-groups?group=      -> GET  /v1/scaling-groups?<query>
 *   GET  /resource/presets           -> GET  /v1/resource/presets
 *   POST /resource/check-presets     -> POST /v1/resource/check-presets (body as sent)
 *   POST /resource/recalculate-usage -> POST /v1/admin/occupancy/recalculate
 *                                       (superadmins; occupancy_sync.h)
 *   GET  /resource/stats/user/month  -> GET  /v1/resource/stats/user/month (usage_stats.h)
 *   GET  /resource/stats/admin/month -> GET  /v1/resource/stats/admin/month (superadmins)
 *   GET  /resource/usage/month       -> GET  /v1/resource/usage/month?<query> (admins;
 *                                       usage_bai.h)
 *   GET  /resource/usage/period      -> GET  /v1/resource/usage/period?<query> (admins)
 *   GET  /usage                      -> GET  /v1/usage?<query> (usage_api.h; Accept:
 *                                       text/csv adds format=csv)
 *   POST /config/get|set|delete      -> POST /v1/config/... (superadmins; config_store.h)
 *   GET  /config/docker-registries   -> GET  /v1/config/docker-registries (superadmins)
 *
 * Every route is signed (verify.c); the registry resolves the caller and
 * checks its body. (The admin CRUD, /admin/resource-presets, is routed with
 * the registry's other admin resources in sessions.c.) */
#ifndef GATEWAY_RESOURCES_H
#define GATEWAY_RESOURCES_H

#include "gateway.h"

#define RESOURCES_TIMEOUT_MS 10000
#define RESOURCES_RECALC_TIMEOUT_MS 30000 /* up to 5 s waiting for placements, then the rebuild */

void resources_routes(gateway *gw);

#endif
