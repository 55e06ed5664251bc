/* registry.h: what tessera-registry's modules share: the configuration, the
 * service handle, database and Redis helpers for code that is not an HTTP
 * handler (event consumers, periodic work), and the session statuses.
 *
 * Modules (one concern each):
 *   main.c             options and wiring
 *   http_api.c         routes
 *   caller.c           who calls (X-Tessera-Caller*), through auth_client.c
 *   auth_client.c      tessera-auth's session contexts (libcommon/authctx.h: cached for
 *                      registry.context_cache_ttl, dropped on tessera.auth.v1 events)
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

#include "libcommon/slots.h"
#include "libcommon/svc.h"

typedef struct reg_config {
    char *auth_url;
    int64_t auth_timeout_ms;
    int64_t context_cache_ttl_ms;
    int64_t context_cache_entries;
    int64_t largest_agent_cache_ms;
    char *oci_registry;
    bool oci_plain_http;
    int64_t oci_timeout_ms;
    int64_t agent_lost_timeout_ms;
    int64_t lost_check_interval_ms;
    int64_t pending_check_interval_ms;
    int64_t event_consumers;
    bool auto_register_images;
    int64_t reconcile_interval_ms;
    int64_t kernel_reconcile_interval_ms;
    int64_t stuck_timeout_ms;
    char *redis_prefix;
    int64_t default_wait_ms;
    int64_t max_wait_ms;
    int64_t max_waiting_creates;
    char *default_slots;
    char *wsproxy_url;
    char *vfolder_url;
    int64_t vfolder_timeout_ms;
} reg_config;

extern reg_config reg_cfg;
extern svc *reg_svc;

/* Session statuses (sessions.status). */
#define ST_PENDING "PENDING"
#define ST_SCHEDULED "SCHEDULED"
#define ST_PREPARING "PREPARING"
#define ST_PULLING "PULLING"
#define ST_RUNNING "RUNNING"
#define ST_RESTARTING "RESTARTING"
#define ST_TERMINATING "TERMINATING"
#define ST_TERMINATED "TERMINATED"
#define ST_CANCELLED "CANCELLED"
#define ST_ERROR "ERROR"
/* SQL lists. */
#define SQL_FINAL "('TERMINATED', 'CANCELLED', 'ERROR')"

bool reg_status_final(const char *status);

/* ---- database for non-HTTP code -------------------------------------------------------- */

/* A pooled connection (waits up to 5 s) or NULL with err. */
PGconn *reg_pg_get(ts_err *err);
void reg_pg_put(PGconn *conn);
/* pg_exec_cached (PQexecParams through the connection's statement cache);
 * NULL with err (and the SQLSTATE in *state when given) on failure. */
PGresult *reg_exec(PGconn *conn, const char *sql, int n, const char *const *params, ts_err *err);
/* reg_exec without the statement cache: planned at each call, for the
 * table sizes of now. For the statements that join a batch's rows to a
 * table: a plan cached while the table was small reads all of it later. */
PGresult *reg_exec_planned(PGconn *conn, const char *sql, int n, const char *const *params,
                           ts_err *err);
/* A uuid[] literal, {id,id,...}, of n ids the caller checked are UUIDs
 * (ts_uuid_valid); free() it. */
char *reg_uuid_array(const char *const *ids, size_t n);
/* Like reg_exec for statements whose result is not needed. */
bool reg_run(PGconn *conn, const char *sql, int n, const char *const *params,
             ts_err *err) TS_MUST_CHECK;

/* The thread's Redis connection (svc_redis). */
rds *reg_redis(ts_err *err);

#endif
