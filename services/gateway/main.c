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
    {.name = "auth.cache_ttl",
     .type = CFG_DURATION,
     .dst = &g_gw.cache_ttl_ms,
     .def = "60s",
     .min = 1000,
     .max = 3600000,
     .help = "how long verified credentials are cached (revocations arrive sooner via "
             "tessera.auth.v1)"},
    {.name = "auth.negative_cache_ttl",
     .type = CFG_DURATION,
     .dst = &g_gw.negative_ttl_ms,
     .def = "1s",
     .max = 60000,
     .help = "how long an unknown access key is remembered as unknown"},
    {.name = "auth.timeout",
     .type = CFG_DURATION,
     .dst = &g_gw.auth_timeout_ms,
     .def = "10s",
     .min = 100,
     .max = 600000,
     .help = "time limit of a request forwarded to tessera-auth (then 503)"},
    {.name = "audit.batch_records",
     .type = CFG_INT,
     .dst = &g_gw.audit_batch_records,
     .def = "256",
     .min = 1,
     .max = AUDIT_BATCH_MAX_RECORDS,
     .help = "most access records in one ApiAccessBatch on tessera.audit.v1"},
    {.name = "audit.batch_wait",
     .type = CFG_DURATION,
     .dst = &g_gw.audit_batch_wait_ms,
     .def = "5ms",
     .max = 1000,
     .help = "how long a batch of access records gathers after its first record"},
    {.name = "gateway.console_dir",
     .type = CFG_STRING,
     .dst = &g_gw.console_dir,
     .def = "",
     .help = "directory of the web console's files, served at /console/ (empty: "
             "<bindir>/../share/tessera/console, else <bindir>/../console as `make` builds it)"},
    {.name = "gateway.web_session_idle",
     .type = CFG_DURATION,
     .dst = &g_gw.web_idle_ms,
     .def = "1h",
     .min = 60000,
     .max = 604800000,
     .help = "a console login ends after this long without a request"},
    {.name = "gateway.web_session_max_age",
     .type = CFG_DURATION,
     .dst = &g_gw.web_max_age_ms,
     .def = "12h",
     .min = 60000,
     .max = 2592000000,
     .help = "a console login ends this long after it began, however it is used"},
    {.name = "gateway.web_allowed_origins",
     .type = CFG_STRING,
     .dst = &g_gw.web_origins,
     .def = "",
     .help = "origins besides the gateway's own (its Host) whose pages may use a console login, "
             "comma-separated (\"https://console.example.com\"), for a proxy that rewrites Host"},
    {.name = "gateway.token_login_name",
     .type = CFG_STRING,
     .dst = &g_gw.token_login_name,
     .def = "sToken",
     .help = "single sign-on: the body field and cookie that carry the token of POST "
             "/server/token-login (Backend.AI's api.auth_token_name; tessera-auth verifies it: "
             "auth.sso_secret_file)"},
    {.name = "gateway.cors_origins",
     .type = CFG_STRING,
     .dst = &g_gw.cors_origins,
     .def = "",
     .help = "origins whose pages may call the API (CORS), comma-separated "
             "(\"https://webui.example.com\"), or \"*\" for any origin without credentials; empty: "
             "none (the console is served by the gateway itself and needs none)"},
    {.name = "gateway.web_cookie_secure",
     .type = CFG_ENUM,
     .dst = &g_gw.web_cookie_secure,
     .def = "auto",
     .choices = "auto|always|never",
     .help = "the console cookie's Secure flag: auto sets it when the request came over TLS "
             "(X-Forwarded-Proto: https from the proxy in front)"},
    {.name = "gateway.max_event_streams",
     .type = CFG_INT,
     .dst = &g_gw.max_event_streams,
     .def = "256",
     .max = 100000,
     .help = "event streams (/events/session, /events/background-task) open at once; beyond: 503 "
             "(each holds a connection, not a worker thread)"},
    {.name = "gateway.event_keepalive",
     .type = CFG_DURATION,
     .dst = &g_gw.event_keepalive_ms,
     .def = "15s",
     .min = 1000,
     .max = 300000,
     .help = "how often an idle event stream gets a keep-alive comment"},
    {.name = "gateway.max_streams",
     .type = CFG_INT,
     .dst = &g_gw.max_streams,
     .def = "256",
     .min = 1,
     .max = 100000,
     .help = "most WebSocket streams (/stream/session/...: pty, execute, tcpproxy) this gateway "
             "holds at once, each with a thread of its own; beyond: 503 before the upgrade"},
    {.name = "gateway.status_timeout",
     .type = CFG_DURATION,
     .dst = &g_gw.status_timeout_ms,
     .def = "2s",
     .min = 100,
     .max = 30000,
     .help = "GET /admin/status: how long each service's /healthz and /readyz may take (probed at "
             "once; one that does not answer in time shows as unreachable)"},
    {.name = "gateway.status_targets",
     .type = CFG_STRING,
     .dst = &g_gw.status_targets,
     .def = "",
     .help = "GET /admin/status: services besides the upstreams and the agents, as name=URL items, "
             "comma-separated (\"scheduler=http://127.0.0.1:8093\")"},
    {0},
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
