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
    {.name = "auth.url",
     .type = CFG_STRING,
     .dst = &reg_settings.auth_url,
     .def = "http://127.0.0.1:8091",
     .help = "tessera-auth (session contexts: owner, policy, allowed resource groups)"},
    {.name = "auth.timeout",
     .type = CFG_DURATION,
     .dst = &reg_settings.auth_timeout_ms,
     .def = "5s",
     .min = 100,
     .max = 600000,
     .help = "time limit of a call to tessera-auth"},
    {.name = "registry.context_cache_ttl",
     .type = CFG_DURATION,
     .dst = &reg_settings.context_cache_ttl_ms,
     .def = "5s",
     .max = 3600000,
     .help = "how long a session context from tessera-auth is reused (tessera.auth.v1 events drop "
             "it sooner); 0: ask auth on every call"},
    {.name = "registry.context_cache_entries",
     .type = CFG_INT,
     .dst = &reg_settings.context_cache_entries,
     .def = "4096",
     .min = 1,
     .max = 1000000,
     .help =
         "session contexts kept at most (access key and group each); the least recently used goes"},
    {.name = "registry.largest_agent_cache",
     .type = CFG_DURATION,
     .dst = &reg_settings.largest_agent_cache_ms,
     .def = "2s",
     .max = 3600000,
     .help = "how long a create reuses the largest agent's slots of a group for its size check (0: "
             "read them every time; a refusal always reads them again)"},
    {.name = "oci.registry",
     .type = CFG_STRING,
     .dst = &reg_settings.oci_registry,
     .def = "",
     .help = "default OCI registry (host:port) for image references without one, and for scans"},
    {.name = "oci.plain_http",
     .type = CFG_BOOL,
     .dst = &reg_settings.oci_plain_http,
     .def = "true",
     .help = "reach the built-in registry (oci.registry) and unregistered hosts over http:// "
             "(development); false: https://. Registered registries follow their URL's scheme; an "
             "http:// one can be registered only while this is true"},
    {.name = "oci.ca_file",
     .type = CFG_STRING,
     .dst = &reg_settings.oci_ca_file,
     .def = "",
     .help = "PEM file of the CA(s) that https:// OCI registries' certificates are checked against "
             "(a registry with a certificate of the cluster's own CA); empty = the system's"},
    {.name = "oci.timeout",
     .type = CFG_DURATION,
     .dst = &reg_settings.oci_timeout_ms,
     .def = "10s",
     .min = 100,
     .max = 600000,
     .help = "time limit of a request to an OCI registry"},
    {.name = "registry.agent_lost_timeout",
     .type = CFG_DURATION,
     .dst = &reg_settings.agent_lost_timeout_ms,
     .def = "30s",
     .min = 1000,
     .max = 86400000.0,
     .help = "an agent without a heartbeat for this long is LOST and its sessions end in ERROR"},
    {.name = "registry.lost_check_interval",
     .type = CFG_DURATION,
     .dst = &reg_settings.lost_check_interval_ms,
     .def = "1s",
     .min = 100,
     .max = 600000,
     .help = "how often agents' heartbeats are checked"},
    {.name = "registry.event_consumers",
     .type = CFG_INT,
     .dst = &reg_settings.event_consumers,
     .def = "0",
     .max = 16,
     .help =
         "consumers per event consumer group (sessions, kernels, agents): partitions are handled "
         "in parallel, each in order; 0: 1 on a machine of at most two CPUs, 3 on larger ones"},
    {.name = "registry.pending_check_interval",
     .type = CFG_DURATION,
     .dst = &reg_settings.pending_check_interval_ms,
     .def = "1s",
     .min = 100,
     .max = 600000,
     .help =
         "how often PENDING sessions are checked against their resource group's pending_timeout"},
    {.name = "registry.auto_register_images",
     .type = CFG_BOOL,
     .dst = &reg_settings.auto_register_images,
     .def = "true",
     .help = "register an unknown image on first use when its OCI registry has it"},
    {.name = "registry.reconcile_interval",
     .type = CFG_DURATION,
     .dst = &reg_settings.reconcile_interval_ms,
     .def = "2s",
     .min = 100,
     .max = 600000,
     .help = "how often Redis is checked for lost occupancy (then rebuilt from PostgreSQL) and "
             "wsproxy's app routes for a loss (then restored from PostgreSQL)"},
    {.name = "registry.kernel_reconcile_interval",
     .type = CFG_DURATION,
     .dst = &reg_settings.kernel_reconcile_interval_ms,
     .def = "10s",
     .max = 3600000,
     .help = "how often every ALIVE agent's kernels (GET /v1/kernels) are compared with the "
             "database, sessions stuck past registry.stuck_timeout are driven on and Redis "
             "reservations are checked against live kernels (0: never)"},
    {.name = "registry.stuck_timeout",
     .type = CFG_DURATION,
     .dst = &reg_settings.stuck_timeout_ms,
     .def = "60s",
     .min = 1000,
     .max = 86400000.0,
     .help =
         "a kernel or session in a transitional status (PREPARING, PULLING, CREATING, RESTARTING, "
         "TERMINATING) that long without a change is stuck: the reconcile pass drives it on"},
    {.name = "registry.redis_prefix",
     .type = CFG_STRING,
     .dst = &reg_settings.redis_prefix,
     .def = "",
     .help = "prefix of the occupancy keys in Redis (the scheduler's must match)"},
    {.name = "registry.default_wait",
     .type = CFG_DURATION,
     .dst = &reg_settings.default_wait_ms,
     .def = "5s",
     .max = 3600000,
     .help = "how long a create waits for RUNNING when maxWaitSeconds is not given"},
    {.name = "registry.max_wait",
     .type = CFG_DURATION,
     .dst = &reg_settings.max_wait_ms,
     .def = "60s",
     .max = 3600000,
     .help = "the longest a create waits (larger maxWaitSeconds are cut to this)"},
    {.name = "registry.max_waiting_creates",
     .type = CFG_INT,
     .dst = &reg_settings.max_waiting_creates,
     .def = "2",
     .max = 256,
     .help = "create calls that may wait at once (each holds an HTTP worker thread); later ones "
             "answer at once as with enqueueOnly"},
    {.name = "wsproxy.url",
     .type = CFG_STRING,
     .dst = &reg_settings.wsproxy_url,
     .def = "http://127.0.0.1:8096",
     .help = "tessera-wsproxy's internal API: a session's app routes are removed there when it "
             "ends (empty: never)"},
    {.name = "vfolder.url",
     .type = CFG_STRING,
     .dst = &reg_settings.vfolder_url,
     .def = "http://127.0.0.1:8095",
     .help = "tessera-vfolder's internal API: a create's vfolder mounts are resolved there"},
    {.name = "vfolder.timeout",
     .type = CFG_DURATION,
     .dst = &reg_settings.vfolder_timeout_ms,
     .def = "5s",
     .min = 100,
     .max = 600000,
     .help = "time limit of a call to tessera-vfolder (past it, the create is refused with 503)"},
    {.name = "registry.default_slots",
     .type = CFG_STRING,
     .dst = &reg_settings.default_slots,
     .def = "cpu=1 mem=1g",
     .help = "slots of a kernel whose request names none of them (raised to the image's minimums)"},
    {.name = "registry.usage_sample_retention",
     .type = CFG_DURATION,
     .dst = &reg_settings.usage_sample_retention_ms,
     .def = "7d",
     .min = 3600000,
     .max = 3650 * 86400000.0,
     .help = "how long usage samples (registry.usage_samples) are kept; per-session totals are "
             "kept for good (docs/usage.md)"},
    {.name = "registry.cluster_subnet",
     .type = CFG_STRING,
     .dst = &reg_settings.cluster_subnet,
     .def = "10.254.0.0/24",
     .help = "the network of a cluster session's kernels (each session its own, closed to the "
             "others): the kernel of cluster index i gets its i+1-th address (main1 the first); a "
             "/25 or larger, overlapping no agent's agent.cni_subnet (docs/sessions.md, \"Cluster "
             "sessions\")"},
    {0},
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
