/* agents.h: agents as the registry sees them.
 *
 * Consumer of tessera.agent.v1 (group tessera-registry.agents):
 *   AgentStarted   upsert registry.agents (ALIVE, its slots and devices) and
 *                  write its capacity to Redis (schedulable)
 *   AgentHeartbeat last_heartbeat = now(), slots and devices when given, ALIVE
 *                  again if it was LOST; capacity to Redis. The consumer runs
 *                  in batch mode: heartbeats whose capacity fingerprint
 *                  (capacity_fp) equals the stored one for an ALIVE agent
 *                  only move last_heartbeat, all in one statement; the others
 *                  take the full path above
 *   AgentStopped   graceful: TERMINATED, not schedulable (its kernels may be
 *                  re-adopted when it starts again); not graceful or "lost":
 *                  as agents_check_lost
 * agents_check_lost (periodic): ALIVE agents without a heartbeat for
 * registry.agent_lost_timeout become LOST, unschedulable in Redis; the
 * registry publishes AgentStopped{reason "lost"}; every live session with a
 * kernel there ends in ERROR "agent <id> lost" (SessionFailed: the scheduler
 * releases its slots; its kernels on other agents get DestroyKernel, and so
 * do its kernels on the lost agent: the commands wait in its topic for its
 * return). The agents' schedulable flag (drain) is agents_drain.h's. */
#ifndef REGISTRY_AGENTS_H
#define REGISTRY_AGENTS_H

#include "libcommon/svc.h"

bool agents_start(svc *s, ts_err *err) TS_MUST_CHECK;
void agents_stop(void);
void agents_check_lost(void);
/* An agent id or resource group name the registry accepts: 1..128 of
 * letters, digits, '-', '_', '.', ':'. */
bool agents_plain_id(const char *s) TS_MUST_CHECK;

#endif
