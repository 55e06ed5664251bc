/* agents_admin.h: the administrators' view of agents.
 *
 *   GET /v1/admin/agents?status=&resource_group=&limit=&offset=
 *   GET /v1/admin/agents/{id}
 *
 * Each agent with its capacity (slots, devices) from PostgreSQL and its
 * occupancy from Redis (occupied_slots, devices[].occupied_shares, in_redis),
 * its status and the kernels holding slots there. Administrators only. */
#ifndef REGISTRY_AGENTS_ADMIN_H
#define REGISTRY_AGENTS_ADMIN_H

#include "libcommon/svc.h"

void agents_admin_routes(svc *s);

#endif
