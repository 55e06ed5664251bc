/* resource_groups.h: /v1/admin/resource-groups (superadmins write,
 * administrators read):
 *   GET   /v1/admin/resource-groups?is_active=&limit=&offset=   paged list
 *   GET   /v1/admin/resource-groups/{name}
 *   POST  /v1/admin/resource-groups  {"name", "description", "is_active",
 *         "scheduler": fifo|lifo|drf, "agent_selector":
 *         concentrated|dispersed|roundrobin, "allowed_session_types":
 *         [interactive, batch, inference], "pending_timeout": seconds,
 *         "idle_timeout": seconds (0: none; the default idle timeout of
 *         sessions whose keypair policy leaves it undefined, idle_scopes.h),
 *         "idle_inference": bool (its inference sessions are checked too)}  201
 *   PATCH /v1/admin/resource-groups/{name}  (the same fields, all optional; a
 *         changed idle_timeout or idle_inference recomputes the group's live
 *         sessions')
 * Each answer carries the group with "agents" (ALIVE agents in it). The
 * "default" group exists from the first start. Who may use a group is
 * tessera-auth's resource-group access (docs/api.md). */
#ifndef REGISTRY_RESOURCE_GROUPS_H
#define REGISTRY_RESOURCE_GROUPS_H

#include "libcommon/svc.h"

void resource_groups_routes(svc *s);

#endif
