/* registry.h: what tessera-registry's modules share: the configuration, the
 * service handle, database and Redis helpers for code that is not an HTTP
 * handler (event consumers, periodic work), and the session statuses.
 *
 * Modules (one concern each):
 *   main.c             options and wiring
 *   http_api.c         routes
 *   caller.c           who calls (X-Tessera-Caller*), through auth_client.c
 *   auth_client.c      GET /v1/session-context on tessera-auth, through the cache
 *   context_cache.c    session contexts kept for registry.context_cache_ttl (LRU, bounded)
 *   auth_events.c      tessera.auth.v1 consumer: drops cached contexts
 *   session_create.c   POST /v1/sessions: parse, validate, insert, enqueue, wait
 *   largest_agent.c    per group, the largest agent's slots (cached) for the create
 *   mounts.c           vfolder mounts: resolved by tessera-vfolder, who mounts a folder
 *   validation.c       the create body (Backend.AI's shape) -> create_req
 *   sessions.c         get, list, destroy, restart, history
 *   session_view.c     a session as Backend.AI's camelCase JSON
 *   lifecycle.c        tessera.session.v1 / tessera.kernel.v1 consumers
 *   transitions.c      guarded status changes, history rows, agent commands
 *   waiters.c          create calls waiting for RUNNING (condition variable)
 *   agents.c           tessera.agent.v1 consumer (heartbeats batched), LOST detection
 *   agents_admin.c     admin API for agents
 *   occupancy_sync.c   agent capacity in Redis, rebuild after a loss, stale reservations
 *   reconcile.c        agents' kernels against the database, stuck sessions re-driven
 *   route_sync.c       wsproxy's app routes kept in PostgreSQL, restored after a Redis loss
 *   resource_groups.c  admin API
 *   images.c, oci.c    admin API, registration from the OCI registry
 *   publish.c          events out (tessera.session.v1, tessera.agent.cmd.<id>) */
#ifndef REGISTRY_H
#define REGISTRY_H

#include "context.h"
#include "db_common.h"
#include "libcommon/slots.h"

#endif
