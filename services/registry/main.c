/* tessera-registry: sessions, kernels, agents, resource groups and images
 * (the system of record). Wiring only; each concern has its own file
 * (registry.h lists them). */
#include "agents.h"
#include "auth_client.h"
#include "bgtasks.h"
#include "context.h"
#include "event_consumers.h"
#include "housekeeping.h"
#include "http_api.h"
#include "libcommon/depinfo.h"
#include "libcommon/log.h"
#include "lifecycle.h"
#include "occupancy_sync.h"
#include "idle_network.h"
#include "idle_scopes.h"
#include "reconcile.h"
#include "session_cluster.h"
#include "usage_store.h"
#include "waiters.h"

#include <sodium.h>
#include <stdlib.h>

extern const pg_migration registry_migrations[];
extern const size_t registry_migrations_count;

static const cfg_option registry_options[] = {
    {"auth.url", CFG_STRING, &reg_settings.auth_url, "http://127.0.0.1:8091", 0, 0, NULL, false,
     NULL, "tessera-auth (session contexts: owner, policy, allowed resource groups)"},
    {"auth.timeout", CFG_DURATION, &reg_settings.auth_timeout_ms, "5s", 100, 600000, NULL, false,
     NULL, "time limit of a call to tessera-auth"},
    {"registry.context_cache_ttl", CFG_DURATION, &reg_settings.context_cache_ttl_ms, "5s", 0,
     3600000, NULL, false, NULL,
     "how long a session context from tessera-auth is reused (tessera.auth.v1 events drop it "
     "sooner); 0: ask auth on every call"},
    {"registry.context_cache_entries", CFG_INT, &reg_settings.context_cache_entries, "4096", 1,
     1000000, NULL, false, NULL,
     "session contexts kept at most (access key and group each); the least recently used goes"},
    {"registry.largest_agent_cache", CFG_DURATION, &reg_settings.largest_agent_cache_ms, "2s", 0,
     3600000, NULL, false, NULL,
     "how long a create reuses the largest agent's slots of a group for its size check (0: read "
     "them every time; a refusal always reads them again)"},
    {"oci.registry", CFG_STRING, &reg_settings.oci_registry, "", 0, 0, NULL, false, NULL,
     "default OCI registry (host:port) for image references without one, and for scans"},
    {"oci.plain_http", CFG_BOOL, &reg_settings.oci_plain_http, "true", 0, 0, NULL, false, NULL,
     "reach the built-in registry (oci.registry) and unregistered hosts over http:// "
     "(development); false: https://. Registered registries follow their URL's scheme; an "
     "http:// one can be registered only while this is true"},
    {"oci.ca_file", CFG_STRING, &reg_settings.oci_ca_file, "", 0, 0, NULL, false, NULL,
     "PEM file of the CA(s) that https:// OCI registries' certificates are checked against "
     "(a registry with a certificate of the cluster's own CA); empty = the system's"},
    {"oci.timeout", CFG_DURATION, &reg_settings.oci_timeout_ms, "10s", 100, 600000, NULL, false,
     NULL, "time limit of a request to an OCI registry"},
    {"registry.agent_lost_timeout", CFG_DURATION, &reg_settings.agent_lost_timeout_ms, "30s", 1000,
     86400000.0, NULL, false, NULL,
     "an agent without a heartbeat for this long is LOST and its sessions end in ERROR"},
    {"registry.lost_check_interval", CFG_DURATION, &reg_settings.lost_check_interval_ms, "1s", 100,
     600000, NULL, false, NULL, "how often agents' heartbeats are checked"},
    {"registry.event_consumers", CFG_INT, &reg_settings.event_consumers, "0", 0, 16, NULL, false,
     NULL,
     "consumers per event consumer group (sessions, kernels, agents): partitions are handled in "
     "parallel, each in order; 0: 1 on a machine of at most two CPUs, 3 on larger ones"},
    {"registry.pending_check_interval", CFG_DURATION, &reg_settings.pending_check_interval_ms, "1s",
     100, 600000, NULL, false, NULL,
     "how often PENDING sessions are checked against their resource group's pending_timeout"},
    {"registry.auto_register_images", CFG_BOOL, &reg_settings.auto_register_images, "true", 0, 0,
     NULL, false, NULL, "register an unknown image on first use when its OCI registry has it"},
    {"registry.reconcile_interval", CFG_DURATION, &reg_settings.reconcile_interval_ms, "2s", 100,
     600000, NULL, false, NULL,
     "how often Redis is checked for lost occupancy (then rebuilt from PostgreSQL) and wsproxy's "
     "app routes for a loss (then restored from PostgreSQL)"},
    {"registry.kernel_reconcile_interval", CFG_DURATION, &reg_settings.kernel_reconcile_interval_ms,
     "10s", 0, 3600000, NULL, false, NULL,
     "how often every ALIVE agent's kernels (GET /v1/kernels) are compared with the database, "
     "sessions stuck past registry.stuck_timeout are driven on and Redis reservations are "
     "checked against live kernels (0: never)"},
    {"registry.stuck_timeout", CFG_DURATION, &reg_settings.stuck_timeout_ms, "60s", 1000,
     86400000.0, NULL, false, NULL,
     "a kernel or session in a transitional status (PREPARING, PULLING, CREATING, RESTARTING, "
     "TERMINATING) that long without a change is stuck: the reconcile pass drives it on"},
    {"registry.redis_prefix", CFG_STRING, &reg_settings.redis_prefix, "", 0, 0, NULL, false, NULL,
     "prefix of the occupancy keys in Redis (the scheduler's must match)"},
    {"registry.default_wait", CFG_DURATION, &reg_settings.default_wait_ms, "5s", 0, 3600000, NULL,
     false, NULL, "how long a create waits for RUNNING when maxWaitSeconds is not given"},
    {"registry.max_wait", CFG_DURATION, &reg_settings.max_wait_ms, "60s", 0, 3600000, NULL, false,
     NULL, "the longest a create waits (larger maxWaitSeconds are cut to this)"},
    {"registry.max_waiting_creates", CFG_INT, &reg_settings.max_waiting_creates, "2", 0, 256, NULL,
     false, NULL,
     "create calls that may wait at once (each holds an HTTP worker thread); later ones answer "
     "at once as with enqueueOnly"},
    {"wsproxy.url", CFG_STRING, &reg_settings.wsproxy_url, "http://127.0.0.1:8096", 0, 0, NULL,
     false, NULL,
     "tessera-wsproxy's internal API: a session's app routes are removed there when it ends "
     "(empty: never)"},
    {"vfolder.url", CFG_STRING, &reg_settings.vfolder_url, "http://127.0.0.1:8095", 0, 0, NULL,
     false, NULL, "tessera-vfolder's internal API: a create's vfolder mounts are resolved there"},
    {"vfolder.timeout", CFG_DURATION, &reg_settings.vfolder_timeout_ms, "5s", 100, 600000, NULL,
     false, NULL,
     "time limit of a call to tessera-vfolder (past it, the create is refused with 503)"},
    {"registry.default_slots", CFG_STRING, &reg_settings.default_slots, "cpu=1 mem=1g", 0, 0, NULL,
     false, NULL,
     "slots of a kernel whose request names none of them (raised to the image's minimums)"},
    {"registry.usage_sample_retention", CFG_DURATION, &reg_settings.usage_sample_retention_ms, "7d",
     3600000, 3650 * 86400000.0, NULL, false, NULL,
     "how long usage samples (registry.usage_samples) are kept; per-session totals are kept for "
     "good (docs/usage.md)"},
    {"registry.cluster_subnet", CFG_STRING, &reg_settings.cluster_subnet, "10.254.0.0/24", 0, 0,
     NULL, false, NULL,
     "the network of a cluster session's kernels (each session its own, closed to the others): "
     "the kernel of cluster index i gets its i+1-th address (main1 the first); a /25 or larger, "
     "overlapping no agent's agent.cni_subnet (docs/sessions.md, \"Cluster sessions\")"},
    {NULL},
};

static bool registry_setup(svc *s, ts_err *err)
{
    reg_context_set_service(s);
    if (sodium_init() < 0) {
        ts_err_set(err, "libsodium failed to initialize");
        return false;
    }
    slots_t check;
    if (!slots_parse_text(&check, reg_settings.default_slots, err)) {
        ts_err_prefix(err, "registry.default_slots");
        return false;
    }
    if (!session_cluster_subnet_valid(reg_settings.cluster_subnet, err)) return false;
    registry_routes(s);
    return true;
}

/* The OCI registry (oci.registry): images are pulled by the agents and
 * scanned on demand, so sessions of cached images do not need it; its state
 * is a dependency in /readyz, not a check. */
static json_t *dep_oci(svc *s, void *ctx)
{
    (void)s, (void)ctx;
    char *url = ts_asprintf("%s://%s/v2/", reg_settings.oci_plain_http ? "http" : "https",
                            reg_settings.oci_registry);
    int64_t t = reg_settings.oci_timeout_ms < 1000 ? reg_settings.oci_timeout_ms : 1000;
    json_t *o = depinfo_http(url, (int)t, 200);
    free(url);
    return o;
}

static bool registry_start(svc *s, ts_err *err)
{
    if (reg_settings.oci_registry && *reg_settings.oci_registry)
        svc_add_dependency(s, "oci-registry", dep_oci, NULL);
    /* Redis holds what PostgreSQL says, from the start. */
    if (!occupancy_rebuild(err)) {
        ts_err_prefix(err, "occupancy rebuild");
        return false;
    }
    TLOG_INFO("event consumers", "per_group=%d configured=%lld", reg_event_consumers(),
              (long long)reg_settings.event_consumers);
    if (!bgtasks_start(s, err)) {
        ts_err_prefix(err, "background tasks");
        return false;
    }
    if (!authc_start(s, err) || !agents_start(s, err) || !lifecycle_start(s, err) ||
        !usage_store_start(s, err) || !waiters_feed_start(err) || !idle_scopes_start(s, err))
        return false;
    reconcile_register_metrics(s);
    idle_network_register_metrics(s);
    return housekeeping_start(err);
}

static void registry_stop(svc *s)
{
    (void)s;
    housekeeping_stop();
    idle_scopes_stop();
    waiters_feed_stop();
    usage_store_stop();
    lifecycle_stop();
    agents_stop();
    authc_stop();
}

/* Who may call what (docs/internal-api.md). */
static const svcauth_rule REGISTRY_ACCESS[] = {
    {"*", "/v1/sessions", SVCAUTH_GATEWAY},         {"*", "/v1/admin", SVCAUTH_GATEWAY},
    {"GET", "/v1/scaling-groups", SVCAUTH_GATEWAY}, {"*", "/v1/resource", SVCAUTH_GATEWAY},
    {"GET", "/v1/vfolder-mounts", SVCAUTH_VFOLDER}, {"*", "/v1/session-templates", SVCAUTH_GATEWAY},
    {"GET", "/v1/bgtasks", SVCAUTH_GATEWAY},        {"*", "/v1/config", SVCAUTH_GATEWAY},
    {"GET", "/v1/usage", SVCAUTH_GATEWAY},
};

int main(int argc, char **argv)
{
    static svc_spec spec = {
        .name = "registry",
        .summary = "sessions, kernels, agents, resource groups and images (system of record)",
        .default_listen = "127.0.0.1:8092",
        .needs = SVC_NEEDS_PG | SVC_NEEDS_REDIS | SVC_NEEDS_KAFKA,
        .pg_schema = "registry",
        .options = registry_options,
        .routes = registry_setup,
        .start = registry_start,
        .stop = registry_stop,
        .access = REGISTRY_ACCESS,
        .n_access = TS_ARRAY_LEN(REGISTRY_ACCESS),
        .calls_services = true,
    };
    spec.migrations = registry_migrations;
    spec.n_migrations = registry_migrations_count;
    return svc_main(argc, argv, &spec);
}
