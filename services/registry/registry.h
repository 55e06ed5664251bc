/* registry.h: tessera-registry's table of contents, and the shared basics in
 * one include (context.h: configuration and service handle; db_common.h:
 * statuses, database and Redis helpers). Modules (one concern each; each has
 * its contract in its header; `make lint` checks that this list names them all):
 *
 *   wiring
 *     main.c             options, set-up, start and stop (nothing calls it)
 *     context.c          the configuration and the service handle (a leaf)
 *     http_api.c         the routes, one module per concern
 *     lifecycle.c        the session and kernel consumer groups
 *     event_consumers.c  consumer groups of registry.event_consumers consumers
 *     housekeeping.c     the periodic work, on two threads
 *     bgtasks.c          background tasks: long work answered at once with a task id
 *   the session API (HTTP)
 *     session_create.c   POST /v1/sessions: parse, validate, insert, enqueue, wait
 *     validation.c       the create body (Backend.AI's shape) -> create_req
 *     sql_row.c          an INSERT built from named columns (the session row)
 *     largest_agent.c    per group, the largest agent's slots (cached) for the create
 *     session_cluster.c  a cluster session's network id and SSH keypair, made at create
 *     home_files.c       the owner's dotfiles and SSH keypair for a new kernel's /home/work
 *     mounts.c           vfolder mounts: resolved by tessera-vfolder, who mounts a folder
 *     images.c, oci.c    images: found (auto-registered) for a create; admin API;
 *                        registration from the OCI registry
 *     container_registries.c the registered OCI registries (scanned, pulled from)
 *     image_config.c     an image's limits (min/max) and label overrides
 *     config_store.c     POST /v1/config/get|set|delete: Backend.AI's config keys,
 *                        dispatched to the above; the shared settings table
 *     sessions.c         get, list, destroy, restart, history
 *     session_relay.c    execute, logs and app starts relayed to the agent
 *     session_view.c     a session as Backend.AI's camelCase JSON
 *     listing.c          paged lists and single rows as the API answers them
 *     caller.c           who calls (libcommon/caller.h's ts_caller), through auth_client.c
 *     auth_client.c      tessera-auth's session contexts (libcommon/authctx.h: cached for
 *                        registry.context_cache_ttl, dropped on tessera.auth.v1 events)
 *   the session lifecycle (events)
 *     session_enqueued.c SessionEnqueued out (after a create; republished)
 *     session_events.c   tessera.session.v1 consumer: placements
 *     kernel_events.c    tessera.kernel.v1 consumer: the agents' kernel events
 *     batch_tx.c         one transaction per batch of session-bound events
 *     placements.c       a batch's placements in three statements
 *     kernel_steps.c     a batch's KernelCreating / KernelStarted in a few statements
 *     transitions.c      guarded status changes, history rows, agent commands
 *     pending_timeout.c  PENDING sessions past their group's pending_timeout cancelled
 *     session_lifetime.c RUNNING sessions past their policy's max_session_lifetime ended
 *     idle_network.c     RUNNING sessions unused for their idle_timeout ended (Redis last use)
 *     idle_scopes.c      a session's idle timeout from its scopes; a scope's change applied
 *     session_sweep.c    the loop both share: query, then lock, check and end each
 *     publish.c          the outbox: events out after COMMIT, waiter notifications
 *     waiters.c          create calls waiting for RUNNING (condition variable)
 *     app_routes.c       wsproxy's routes of an ended session removed
 *     pbutil.c           protobuf messages <-> the stored JSON
 *     db_common.c        statuses, database and Redis helpers
 *   agents and reconciliation
 *     agents.c           tessera.agent.v1 consumer (heartbeats batched), LOST detection
 *     agents_admin.c     admin API for agents
 *     resource_groups.c  admin API for resource groups
 *   resources for the launcher (HTTP)
 *     resource_presets.c presets: the table, admin API, GET /v1/resource/presets
 *     scaling_groups.c   the resource groups a caller may use (GET /v1/scaling-groups)
 *     check_presets.c    POST /v1/resource/check-presets: limits, using, remaining
 *     session_templates.c session templates: the table and /v1/session-templates
 *     template_spec.c    a template's checks, and the create body a launch makes of it
 *     template_launch.c  POST /v1/sessions/_/create-from-template
 *     resource_usage.c   usage per owner scope, per group, agents' free capacity
 *     slot_budget.c      remaining = limit - using with unlimited slots (pure)
 *     occupancy_sync.c   agent capacity in Redis, rebuild after a loss, stale reservations
 *     reconcile.c        agents' kernels against the database, stuck sessions re-driven
 *     route_sync.c       wsproxy's app routes kept in PostgreSQL, restored after a Redis loss
 *   usage accounting
 *     usage_store.c      tessera.usage.v1 consumer: samples and per-session totals, pruning
 *     usage_calc.c       totals, month split, dates (pure)
 *     usage_api.c        GET /v1/usage, /v1/resource/usage/month|period, live figures
 *     usage_hours.c      what each session used per UTC hour
 *     usage_live.c       a live kernel's latest sample as Backend.AI's live_stat
 *     usage_stats.c      Backend.AI's monthly usage series (/resource/stats/.../month)
 *     usage_bai.c        Backend.AI's usage reports, per session
 *     repairs.c          the repairs' record (log, counters) and their confirmation */
#ifndef REGISTRY_H
#define REGISTRY_H

#include "context.h"
#include "db_common.h"
#include "libcommon/slots.h"

#endif
