/* tessera-wsproxy: proxies HTTP, WebSocket and TCP to apps inside sessions.
 *
 * Wiring only: the options table, the internal API (api.c) on the libcommon
 * HTTP server, the app proxy's own event loops (proxy.c, conn.c, access.c)
 * on wsproxy.listen, and the watcher (watch.c). docs/wsproxy.md tells how it
 * behaves. */
#include "libcommon/log.h"
#include "libcommon/svc.h"
#include "services/wsproxy/api.h"
#include "services/wsproxy/proxy.h"
#include "services/wsproxy/strip.h"
#include "services/wsproxy/watch.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct {
    char *listen;
    bool listen_shared;
    char *public_url;
    int64_t workers;
    int64_t token_ttl_ms;
    int64_t cookie_ttl_ms;
    int64_t cache_ttl_ms;
    int64_t max_header;
    int64_t buffer_size;
    int64_t header_timeout_ms;
    int64_t idle_timeout_ms;
    int64_t connect_timeout_ms;
    int64_t max_connections;
    bool shared_origin;
    char *strip_cookies;
    char *strip_headers;
} g_opt;

static strip_list g_strip_cookies, g_strip_headers;
static bool g_subdomain_mode;

static const cfg_option g_options[] = {
    {.name = "wsproxy.listen",
     .type = CFG_STRING,
     .dst = &g_opt.listen,
     .def = "127.0.0.1:0",
     .help = "address the app proxy listens on, host:port (port 0: a free one, see GET /v1/info)"},
    {.name = "wsproxy.listen_shared",
     .type = CFG_BOOL,
     .dst = &g_opt.listen_shared,
     .def = "false",
     .help = "share wsproxy.listen (a fixed port) with the other wsproxy instances on this host: "
             "the kernel spreads connections over them all (SO_REUSEPORT); false: a second "
             "wsproxy on the port refuses to start (docs/operations.md, \"Replicas\")"},
    {.name = "wsproxy.public_url",
     .type = CFG_STRING,
     .dst = &g_opt.public_url,
     .def = "",
     .help = "base URL browsers use to reach the proxy; its '*' puts each app on a host name of "
             "its own (https://*.apps.example.com); empty: http://*.apps.localhost:<port of "
             "wsproxy.listen>, for a browser on this machine; a URL without '*' needs "
             "wsproxy.shared_origin"},
    {.name = "wsproxy.shared_origin",
     .type = CFG_BOOL,
     .dst = &g_opt.shared_origin,
     .def = "false",
     .help = "serve every app on the one origin of a wsproxy.public_url without '*' "
             "(empty: http://<wsproxy.listen as bound>). RISK: cookies ignore ports, so on the "
             "console's host name every app is sent the browser's cookies of that host and the "
             "apps of all users share one origin; use a host name of its own, for development "
             "or a single user"},
    {.name = "wsproxy.strip_cookies",
     .type = CFG_STRING,
     .dst = &g_opt.strip_cookies,
     .def = STRIP_DEFAULT_COOKIES,
     .help = "cookies taken out of every request before it reaches an app, comma-separated "
             "names, a trailing '*' for a prefix (tessera_app_* always); keep the console's "
             "(tessera_sid) and single sign-on's (gateway.token_login_name) on it"},
    {.name = "wsproxy.strip_headers",
     .type = CFG_STRING,
     .dst = &g_opt.strip_headers,
     .def = STRIP_DEFAULT_HEADERS,
     .help = "request header fields taken out before a request reaches an app, comma-separated, "
             "a trailing '*' for a prefix; an Authorization of the BackendAI scheme is always "
             "taken out (drop Authorization from the list when apps need their own)"},
    {.name = "wsproxy.workers",
     .type = CFG_INT,
     .dst = &g_opt.workers,
     .def = "0",
     .max = 256,
     .help = "proxy worker threads, each with its own listener and event loop (0: one per CPU)"},
    {.name = "wsproxy.token_ttl",
     .type = CFG_DURATION,
     .dst = &g_opt.token_ttl_ms,
     .def = "10m",
     .min = 10000,
     .max = 86400000,
     .help = "how long an app link's token (POST /v1/routes) stays valid"},
    {.name = "wsproxy.cookie_ttl",
     .type = CFG_DURATION,
     .dst = &g_opt.cookie_ttl_ms,
     .def = "12h",
     .min = 60000,
     .max = 604800000,
     .help = "lifetime of the app cookie set when a token is used; a session's route set slides to "
             "this on use"},
    {.name = "wsproxy.cache_ttl",
     .type = CFG_DURATION,
     .dst = &g_opt.cache_ttl_ms,
     .def = "1s",
     .max = 1000,
     .help = "how long a worker trusts a token, cookie or session lookup (at most 1s, so removal "
             "is quick)"},
    {.name = "wsproxy.max_header_size",
     .type = CFG_BYTES,
     .dst = &g_opt.max_header,
     .def = "32k",
     .min = 1024,
     .max = 1048576,
     .help = "largest request head (request line and fields); larger: 431"},
    {.name = "wsproxy.buffer_size",
     .type = CFG_BYTES,
     .dst = &g_opt.buffer_size,
     .def = "64k",
     .min = 4096,
     .max = 16777216,
     .help = "buffer per direction per connection; bodies and tunnels stream through it"},
    {.name = "wsproxy.header_timeout",
     .type = CFG_DURATION,
     .dst = &g_opt.header_timeout_ms,
     .def = "10s",
     .min = 100,
     .max = 600000,
     .help = "time from connect (or a request's first byte) to its complete head; then 408"},
    {.name = "wsproxy.idle_timeout",
     .type = CFG_DURATION,
     .dst = &g_opt.idle_timeout_ms,
     .def = "60s",
     .min = 100,
     .max = 3600000,
     .help = "idle keep-alive client connections between requests are closed after this"},
    {.name = "wsproxy.connect_timeout",
     .type = CFG_DURATION,
     .dst = &g_opt.connect_timeout_ms,
     .def = "5s",
     .min = 100,
     .max = 600000,
     .help = "connecting to an app; then 504"},
    {.name = "wsproxy.max_connections",
     .type = CFG_INT,
     .dst = &g_opt.max_connections,
     .def = "20000",
     .min = 1,
     .max = 10000000,
     .help = "client connections open at once (over all workers); more are closed at accept"},
    {0},
};

static proxy *g_proxy;
static watch *g_watch;
static api_ctx g_api;
static char *g_public_url;

static rds *thread_redis(void *ctx, ts_err *err)
{
    return svc_redis(ctx, err);
}

static bool check_proxy(svc *s, void *ctx, ts_err *err)
{
    (void)s, (void)ctx;
    if (!g_proxy) {
        ts_err_set(err, "app proxy not listening");
        return false;
    }
    return true;
}

/* The options start-up depends on, checked before anything listens. */
static bool check_options(ts_err *err)
{
    const char *pub = g_opt.public_url ? g_opt.public_url : "";
    if (!strip_list_parse(g_opt.strip_cookies, &g_strip_cookies, err)) {
        ts_err_prefix(err, "wsproxy.strip_cookies");
        return false;
    }
    if (!strip_list_parse(g_opt.strip_headers, &g_strip_headers, err)) {
        ts_err_prefix(err, "wsproxy.strip_headers");
        return false;
    }
    if (pub[0] && strncmp(pub, "http://", 7) != 0 && strncmp(pub, "https://", 8) != 0) {
        ts_err_set(err, "wsproxy.public_url must start with http:// or https://");
        return false;
    }
    g_subdomain_mode = pub[0] ? strchr(pub, '*') != NULL : !g_opt.shared_origin;
    if (pub[0] && !g_subdomain_mode && !g_opt.shared_origin) {
        ts_err_set(err,
                   "wsproxy.public_url %s has no '*': every app would share its one origin; put "
                   "a '*' in it (https://*.apps.example.com) or accept the risk with "
                   "wsproxy.shared_origin = true (docs/wsproxy.md)",
                   pub);
        return false;
    }
    return true;
}

static bool on_routes(svc *s, ts_err *err)
{
    if (!check_options(err)) return false;
    g_api.s = s;
    g_api.token_ttl_ms = g_opt.token_ttl_ms;
    g_api.cookie_ttl_ms = g_opt.cookie_ttl_ms;
    api_routes(svc_router(s), &g_api);
    return true;
}

/* Empty wsproxy.public_url: one host name per app under apps.localhost
 * (browsers and libcurl take *.localhost for the loopback address), or with
 * wsproxy.shared_origin the address as bound. */
static char *default_public_url(const proxy *p)
{
    if (!g_opt.shared_origin) return ts_asprintf("http://*.apps.localhost:%d", proxy_port(p));
    const char *addr = proxy_addr(p);
    if (strncmp(addr, "0.0.0.0:", 8) == 0 || strncmp(addr, "[::]:", 5) == 0)
        return ts_asprintf("http://127.0.0.1:%d", proxy_port(p));
    return ts_asprintf("http://%s", addr);
}

static bool on_start(svc *s, ts_err *err)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int workers = g_opt.workers > 0 ? (int)g_opt.workers : (cpus > 0 ? (int)cpus : 1);
    const char *pub = g_opt.public_url ? g_opt.public_url : "";
    proxy_config cfg = {
        .listen = g_opt.listen,
        .listen_shared = g_opt.listen_shared,
        .workers = workers,
        .max_header = (size_t)g_opt.max_header,
        .buffer_size = (size_t)g_opt.buffer_size,
        .header_timeout_ms = g_opt.header_timeout_ms,
        .idle_timeout_ms = g_opt.idle_timeout_ms,
        .connect_timeout_ms = g_opt.connect_timeout_ms,
        .cookie_ttl_ms = g_opt.cookie_ttl_ms,
        .cache_ttl_ms = g_opt.cache_ttl_ms,
        .max_connections = (int)((g_opt.max_connections + workers - 1) / workers),
        .subdomain_mode = g_subdomain_mode,
        .secure_cookies = strncmp(pub, "https://", 8) == 0,
        .strip_cookies = &g_strip_cookies,
        .strip_headers = &g_strip_headers,
        .redis = thread_redis,
        .redis_ctx = s,
    };
    g_proxy = proxy_start(&cfg, err);
    if (!g_proxy) return false;
    g_public_url = pub[0] ? ts_strdup(pub) : default_public_url(g_proxy);
    g_api.proxy_addr = proxy_addr(g_proxy);
    g_api.public_url = g_public_url;
    metrics_add(svc_metrics(s), proxy_metrics, g_proxy);
    svc_add_check(s, "proxy", check_proxy, NULL);
    g_watch = watch_start(g_proxy, thread_redis, s, g_opt.cookie_ttl_ms, 500);
    TLOG_INFO("apps served", "public_url=%s mode=%s", g_public_url,
              cfg.subdomain_mode ? "subdomain" : "shared");
    if (!cfg.subdomain_mode)
        TLOG_WARN("every app shares one origin (wsproxy.shared_origin): keep it off the "
                  "console's host name",
                  "public_url=%s", g_public_url);
    return true;
}

static void on_stop(svc *s)
{
    (void)s;
    watch_stop(g_watch);
    g_watch = NULL;
    proxy *p = g_proxy;
    g_proxy = NULL;
    proxy_stop(p);
}

/* Who may call the route API (docs/internal-api.md); the app listener
 * (wsproxy.listen) is the public one and checks its own tokens. */
static const svcauth_rule WSPROXY_ACCESS[] = {
    {"POST", "/v1/routes/restore", SVCAUTH_REGISTRY},
    {"POST", "/v1/routes", SVCAUTH_GATEWAY},
    {"DELETE", "/v1/sessions", SVCAUTH_REGISTRY | SVCAUTH_GATEWAY},
    {"GET", "/v1/info", SVCAUTH_GATEWAY | SVCAUTH_REGISTRY},
};

int main(int argc, char **argv)
{
    static const svc_spec spec = {
        .name = "wsproxy",
        .summary = "proxies HTTP, WebSocket and TCP to apps inside sessions",
        .default_listen = "127.0.0.1:8096",
        .needs = SVC_NEEDS_REDIS,
        .options = g_options,
        .routes = on_routes,
        .start = on_start,
        .stop = on_stop,
        .access = WSPROXY_ACCESS,
        .n_access = TS_ARRAY_LEN(WSPROXY_ACCESS),
    };
    return svc_main(argc, argv, &spec);
}
