/* resource_usage.h: what is in use, for POST /v1/resource/check-presets
 * (check_presets.h): per owner scope, per resource group, and per agent.
 *
 * The scopes' usage is what the scheduler counts when it reserves: Redis
 * usage:kp:<ak>, usage:user:<id>, usage:project:<id>, usage:domain:<name>
 * (libcommon/occupancy.h). When Redis cannot be read, or has lost its data
 * (no occupancy marker: a rebuild is due), the same sums come from
 * PostgreSQL: the slots of the kernels that hold slots (kernels.holds_slots),
 * by their session's owner. Agents' free capacity is their announced
 * capacity (agents.slots, devices) minus Redis's used:<slot> (or the
 * kernels holding slots there), never below zero.
 *
 * Group lists are JSON arrays of names as text (jsonb parameters), so any
 * name travels safely. Every function answers a problem on a database error
 * and returns false. */
#ifndef REGISTRY_RESOURCE_USAGE_H
#define REGISTRY_RESOURCE_USAGE_H

#include "libcommon/http.h"
#include "libcommon/occupancy.h"
#include "libcommon/svc.h"

/* ids: access key, user id, project id (NULL: none), domain name.
 * *from_redis: where the numbers came from. */
bool resource_usage_scopes(PGconn *conn, http_resp *resp, const char *const ids[OCC_SCOPES],
                           slots_t out[OCC_SCOPES], bool *from_redis) TS_MUST_CHECK;

/* The slots that user_id's kernels hold in each group of groups (out[i] for
 * the i-th name of the array; n = its size). */
bool resource_usage_by_group(PGconn *conn, http_resp *resp, const char *user_id,
                             const json_t *groups, slots_t *out) TS_MUST_CHECK;

/* An ALIVE agent's free capacity. */
typedef struct agent_free {
    size_t group; /* index in groups */
    slots_t free;
} agent_free;

/* The ALIVE agents of groups: *out (heap, free()) of *n. */
bool resource_usage_agents(PGconn *conn, http_resp *resp, const json_t *groups, agent_free **out,
                           size_t *n) TS_MUST_CHECK;

#endif
