/* tessera-gateway: the public REST API (Backend.AI dialect) in front of the
 * internal services. Wiring only: the option table (with the upstream
 * services' table, upstream.h), then routes in http_api.c, signature checks
 * in verify.c over the credential cache (credentials.c), forwarding in
 * proxy.c, access records in audit.c. */
#include "audit.h"
#include "audit_batch.h"
#include "cors.h"
#include "events.h"
#include "events_session.h"
#include "gateway.h"
#include "http_api.h"
#include "ratelimit.h"
#include "status.h"
#include "streams.h"
#include "verify.h"

static gateway g_gw = {
    .up =
        {
            [UPSTREAM_AUTH] = {"auth", "auth.url", "tessera-auth", "http://127.0.0.1:8091",
                               "base URL of tessera-auth", true},
            [UPSTREAM_REGISTRY] = {"registry", "registry.url", "tessera-registry",
                                   "http://127.0.0.1:8092", "base URL of tessera-registry", true},
            [UPSTREAM_VFOLDER] = {"vfolder", "vfolder.url", "tessera-vfolder",
                                  "http://127.0.0.1:8095", "base URL of tessera-vfolder", true},
            [UPSTREAM_WSPROXY] = {"wsproxy", "wsproxy.url", "tessera-wsproxy",
                                  "http://127.0.0.1:8096",
                                  "base URL of tessera-wsproxy's internal API (start-service "
                                  "creates app routes there)",
                                  false},
        },
};

static const cfg_option gateway_options[] = {
    {"auth.cache_ttl", CFG_DURATION, &g_gw.cache_ttl_ms, "60s", 1000, 3600000, NULL, false, NULL,
     "how long verified credentials are cached (revocations arrive sooner via tessera.auth.v1)"},
    {"auth.negative_cache_ttl", CFG_DURATION, &g_gw.negative_ttl_ms, "1s", 0, 60000, NULL, false,
     NULL, "how long an unknown access key is remembered as unknown"},
    {"auth.timeout", CFG_DURATION, &g_gw.auth_timeout_ms, "10s", 100, 600000, NULL, false, NULL,
     "time limit of a request forwarded to tessera-auth (then 503)"},
    {"audit.batch_records", CFG_INT, &g_gw.audit_batch_records, "256", 1, AUDIT_BATCH_MAX_RECORDS,
     NULL, false, NULL, "most access records in one ApiAccessBatch on tessera.audit.v1"},
    {"audit.batch_wait", CFG_DURATION, &g_gw.audit_batch_wait_ms, "5ms", 0, 1000, NULL, false, NULL,
     "how long a batch of access records gathers after its first record"},
    {"gateway.console_dir", CFG_STRING, &g_gw.console_dir, "", 0, 0, NULL, false, NULL,
     "directory of the web console's files, served at /console/ (empty: "
     "<bindir>/../share/tessera/console, else <bindir>/../console as `make` builds it)"},
    {"gateway.web_session_idle", CFG_DURATION, &g_gw.web_idle_ms, "1h", 60000, 604800000, NULL,
     false, NULL, "a console login ends after this long without a request"},
    {"gateway.web_session_max_age", CFG_DURATION, &g_gw.web_max_age_ms, "12h", 60000, 2592000000,
     NULL, false, NULL, "a console login ends this long after it began, however it is used"},
    {"gateway.web_allowed_origins", CFG_STRING, &g_gw.web_origins, "", 0, 0, NULL, false, NULL,
     "origins besides the gateway's own (its Host) whose pages may use a console login, "
     "comma-separated (\"https://console.example.com\"), for a proxy that rewrites Host"},
    {"gateway.token_login_name", CFG_STRING, &g_gw.token_login_name, "sToken", 0, 0, NULL, false,
     NULL,
     "single sign-on: the body field and cookie that carry the token of POST /server/token-login "
     "(Backend.AI's api.auth_token_name; tessera-auth verifies it: auth.sso_secret_file)"},
    {"gateway.cors_origins", CFG_STRING, &g_gw.cors_origins, "", 0, 0, NULL, false, NULL,
     "origins whose pages may call the API (CORS), comma-separated "
     "(\"https://webui.example.com\"), or \"*\" for any origin without credentials; "
     "empty: none (the console is served by the gateway itself and needs none)"},
    {"gateway.web_cookie_secure", CFG_ENUM, &g_gw.web_cookie_secure, "auto", 0, 0,
     "auto|always|never", false, NULL,
     "the console cookie's Secure flag: auto sets it when the request came over TLS "
     "(X-Forwarded-Proto: https from the proxy in front)"},
    {"gateway.max_event_streams", CFG_INT, &g_gw.max_event_streams, "256", 0, 100000, NULL, false,
     NULL,
     "event streams (/events/session, /events/background-task) open at once; beyond: 503 "
     "(each holds a connection, not a worker thread)"},
    {"gateway.event_keepalive", CFG_DURATION, &g_gw.event_keepalive_ms, "15s", 1000, 300000, NULL,
     false, NULL, "how often an idle event stream gets a keep-alive comment"},
    {"gateway.max_streams", CFG_INT, &g_gw.max_streams, "256", 1, 100000, NULL, false, NULL,
     "most WebSocket streams (/stream/session/...: pty, execute, tcpproxy) this gateway holds "
     "at once, each with a thread of its own; beyond: 503 before the upgrade"},
    {"gateway.status_timeout", CFG_DURATION, &g_gw.status_timeout_ms, "2s", 100, 30000, NULL, false,
     NULL,
     "GET /admin/status: how long each service's /healthz and /readyz may take (probed at once; "
     "one that does not answer in time shows as unreachable)"},
    {"gateway.status_targets", CFG_STRING, &g_gw.status_targets, "", 0, 0, NULL, false, NULL,
     "GET /admin/status: services besides the upstreams and the agents, as name=URL items, "
     "comma-separated (\"scheduler=http://127.0.0.1:8093\")"},
    {NULL},
};

/* The upstreams' URL options, then gateway_options: one table. */
static cfg_option g_options[UPSTREAM_COUNT + TS_ARRAY_LEN(gateway_options)];

static void build_options(void)
{
    upstream_options(g_gw.up, UPSTREAM_COUNT, g_options);
    for (size_t i = 0; i < TS_ARRAY_LEN(gateway_options); i++)
        g_options[UPSTREAM_COUNT + i] = gateway_options[i];
}

static bool gateway_setup(svc *s, ts_err *err)
{
    g_gw.svc = s;
    if (!status_init(&g_gw, err)) return false;
    g_gw.creds =
        credentials_new(s, &g_gw.up[UPSTREAM_AUTH], g_gw.cache_ttl_ms, g_gw.negative_ttl_ms);
    verify_init(&g_gw);
    gateway_routes(&g_gw);
    return true;
}

/* Before routing: CORS (cors.h). */
static bool gateway_guard(svc *s, http_req *req, http_resp *resp)
{
    (void)s;
    return cors_guard(g_gw.cors_origins, req, resp);
}

static bool gateway_start(svc *s, ts_err *err)
{
    upstream_start(s, g_gw.up, UPSTREAM_COUNT);
    ratelimit_init(s);
    audit_opts ao = {.batch_records = (int)g_gw.audit_batch_records,
                     .batch_wait_ms = (int)g_gw.audit_batch_wait_ms};
    return audit_start(s, &ao, err) && credentials_start(g_gw.creds, err) &&
           events_start(&g_gw, err) && events_session_start(&g_gw, err);
}

/* After the last request drained, before the bus is closed: the buffered
 * access records are published, then flushed with the bus. */
static void gateway_stop(svc *s)
{
    (void)s;
    streams_stop(3000);
    events_session_stop();
    events_stop();
    audit_stop();
    credentials_stop(g_gw.creds);
}

int main(int argc, char **argv)
{
    build_options();
    static const svc_spec spec = {
        .name = "gateway",
        .summary = "the public REST API (Backend.AI-compatible) in front of the internal services",
        .default_listen = "127.0.0.1:8090",
        .needs = SVC_NEEDS_REDIS | SVC_NEEDS_KAFKA,
        .options = g_options,
        .routes = gateway_setup,
        .start = gateway_start,
        .stop = gateway_stop,
        .on_request = audit_request,
        .public_guard = gateway_guard,
        .public_api = true,
        .calls_services = true,
    };
    return svc_main(argc, argv, &spec);
}
