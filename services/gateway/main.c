/* tessera-gateway: the public REST API (Backend.AI dialect) in front of the
 * internal services. Wiring only: routes in http_api.c, signature checks in
 * verify.c, the credential cache in cred_cache.c (kept fresh by
 * invalidation.c), rate limits in ratelimit.c, calls to auth in proxy.c,
 * access records in audit.c. */
#include "audit.h"
#include "audit_batch.h"
#include "cred_cache.h"
#include "http_api.h"
#include "invalidation.h"
#include "proxy.h"
#include "ratelimit.h"
#include "upstream.h"
#include "verify.h"

static char *auth_url, *registry_url, *vfolder_url, *wsproxy_url;
static int64_t cache_ttl_ms, negative_ttl_ms, auth_timeout_ms;
static int64_t audit_batch_records, audit_batch_wait_ms;

static const cfg_option gateway_options[] = {
    {"auth.url", CFG_STRING, &auth_url, "http://127.0.0.1:8091", 0, 0, NULL, false, NULL,
     "base URL of tessera-auth"},
    {"auth.cache_ttl", CFG_DURATION, &cache_ttl_ms, "60s", 1000, 3600000, NULL, false, NULL,
     "how long verified credentials are cached (revocations arrive sooner via tessera.auth.v1)"},
    {"auth.negative_cache_ttl", CFG_DURATION, &negative_ttl_ms, "1s", 0, 60000, NULL, false, NULL,
     "how long an unknown access key is remembered as unknown"},
    {"auth.timeout", CFG_DURATION, &auth_timeout_ms, "10s", 100, 600000, NULL, false, NULL,
     "time limit of a request forwarded to tessera-auth (then 503)"},
    {"registry.url", CFG_STRING, &registry_url, "http://127.0.0.1:8092", 0, 0, NULL, false, NULL,
     "base URL of tessera-registry"},
    {"vfolder.url", CFG_STRING, &vfolder_url, "http://127.0.0.1:8095", 0, 0, NULL, false, NULL,
     "base URL of tessera-vfolder"},
    {"wsproxy.url", CFG_STRING, &wsproxy_url, "http://127.0.0.1:8096", 0, 0, NULL, false, NULL,
     "base URL of tessera-wsproxy's internal API (start-service creates app routes there)"},
    {"audit.batch_records", CFG_INT, &audit_batch_records, "256", 1, AUDIT_BATCH_MAX_RECORDS, NULL,
     false, NULL, "most access records in one ApiAccessBatch on tessera.audit.v1"},
    {"audit.batch_wait", CFG_DURATION, &audit_batch_wait_ms, "5ms", 0, 1000, NULL, false, NULL,
     "how long a batch of access records gathers after its first record"},
    {NULL},
};

static upstream upstreams[] = {
    {"auth", &auth_url},
    {"registry", &registry_url},
    {"vfolder", &vfolder_url},
};

/* How long a request waits for another request's look-up of the same key. */
#define CRED_WAIT_MS 3000

static gateway g_gw = {
    .auth_url = &auth_url,
    .cache_ttl_ms = &cache_ttl_ms,
    .negative_ttl_ms = &negative_ttl_ms,
    .auth_timeout_ms = &auth_timeout_ms,
};

static bool gateway_setup(svc *s, ts_err *err)
{
    (void)err;
    g_gw.svc = s;
    g_gw.creds =
        cred_cache_new(cache_ttl_ms, negative_ttl_ms, CRED_WAIT_MS, proxy_fetch_credentials, &g_gw);
    verify_init(&g_gw);
    gateway_routes(&g_gw);
    return true;
}

static bool gateway_start(svc *s, ts_err *err)
{
    upstream_add_checks(s, upstreams, TS_ARRAY_LEN(upstreams));
    ratelimit_init(s);
    audit_opts ao = {.batch_records = (int)audit_batch_records,
                     .batch_wait_ms = (int)audit_batch_wait_ms};
    return audit_start(s, &ao, err) && invalidation_start(&g_gw, err);
}

/* After the last request drained, before the bus is closed: the buffered
 * access records are published, then flushed with the bus. */
static void gateway_stop(svc *s)
{
    (void)s;
    audit_stop();
    invalidation_stop(&g_gw);
}

int main(int argc, char **argv)
{
    static const svc_spec spec = {
        .name = "gateway",
        .summary = "the public REST API (Backend.AI-compatible) in front of the internal services",
        .default_listen = "127.0.0.1:8090",
        .needs = SVC_NEEDS_REDIS | SVC_NEEDS_KAFKA,
        .options = gateway_options,
        .routes = gateway_setup,
        .start = gateway_start,
        .stop = gateway_stop,
        .on_request = audit_request,
        .public_api = true,
        .calls_services = true,
    };
    return svc_main(argc, argv, &spec);
}
