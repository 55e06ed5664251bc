/* agents_admin.h: the administrators' view of agents.
 *
 *   GET /v1/admin/agents?status=&resource_group=&limit=&offset=
 *   GET /v1/admin/agents/{id}
 *   POST /v1/admin/agents/{id}/drain, POST /v1/admin/agents/{id}/undrain
 *
 * Each agent with its capacity (slots, devices) from PostgreSQL and its
 * occupancy from Redis (occupied_slots, devices[].occupied_shares, in_redis),
 * its status, schedulable (false: drained) and the kernels holding slots
 * there. Administrators read; superadmins drain (schedulable false: the
 * scheduler places nothing new there, running kernels stay) and undrain:
 * registry.agents.schedulable, the Redis record (agent:<id> schedulable and
 * drained) and AgentSchedulable on tessera.agent.v1; 200 with the agent,
 * 400 for a malformed id, 404 for an unknown one. */
#ifndef REGISTRY_AGENTS_ADMIN_H
#define REGISTRY_AGENTS_ADMIN_H

#include "libcommon/svc.h"

void agents_admin_routes(svc *s);

#endif
