/* largest_agent.h: per resource group, the largest ALIVE agent's slots (the
 * maximum of each slot over its agents), for the create's "exceeds the
 * largest agent" check.
 *
 * Reading every agent's slots on each create cost tens of ms with 1,000
 * agents, so the answer is kept per group for registry.largest_agent_cache.
 * A cached answer only ever lets a request through: the caller asks again
 * with fresh = true before it refuses one, so a newly started larger agent is
 * never a false refusal. A request let through on an older answer (the large
 * agent went away) waits PENDING, where the scheduler says why.
 * A drained agent counts (schedulable is not read): a session only it could
 * hold is not refused but waits PENDING, the scheduler's reason naming the
 * drain, since an undrain makes it placeable. */
#ifndef REGISTRY_LARGEST_AGENT_H
#define REGISTRY_LARGEST_AGENT_H

#include "libcommon/http.h"
#include "libcommon/slots.h"
#include "libcommon/svc.h"

/* max: per slot, the largest any ALIVE agent of group has; agents: how many
 * there are (0: max is empty). fresh: read PostgreSQL even when an answer is
 * cached. false: the database failed and resp holds the problem. */
bool largest_agent(PGconn *conn, http_resp *resp, const char *group, bool fresh, slots_t *max,
                   int *agents) TS_MUST_CHECK;

#endif
