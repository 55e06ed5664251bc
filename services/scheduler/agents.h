/* agents.h: tessera.agent.v1 on the scheduling thread. An agent's capacity
 * goes into the model (sched_group_set_agent, set_schedulable), into Redis
 * (agent:<id>, when scheduler.write_agent_capacity is on: resv_set_agent keeps
 * occupancy, so the registry writing the same is harmless) and into the
 * scheduler's agent info record (store.h). Occupancy comes back from Redis
 * (other instances' placements) by resync. Log lines name the agent through
 * the caller's log context. */
#ifndef TESSERA_SCHED_AGENTS_H
#define TESSERA_SCHED_AGENTS_H

#include "services/scheduler/state.h"

/* AgentStarted / AgentHeartbeat: only a change costs anything. */
void sched_on_agent_up(sched_svc *x, const sched_agent_msg *m);
/* AgentStopped: not schedulable (its kernels keep their slots). */
void sched_on_agent_down(sched_svc *x, const char *agent_id, const char *reason);
/* AgentSchedulable (or the drained mark read from Redis at start-up):
 * drained, the agent is not schedulable until undrained, whatever its
 * heartbeats say; its kernels keep their slots. An agent not known yet keeps
 * the mark for its first announcement. */
void sched_on_agent_drain(sched_svc *x, const char *agent_id, bool drained, const char *by);
/* One agent's occupancy from Redis into the model; false when the agent is
 * unknown or Redis could not say (logged). */
bool sched_resync_agent(sched_svc *x, const char *agent_id) TS_MUST_CHECK;
/* Every agent's; a group whose occupancy changed wants a pass. */
void sched_resync_all(sched_svc *x);
/* Write every known agent's capacity (and info) to Redis again. */
void sched_rewrite_agents(sched_svc *x);

#endif
