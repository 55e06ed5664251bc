/* svc.c: the common life of a service process (see svc.h for the sequence). */
#include "libcommon/svc.h"

#include "libcommon/depinfo.h"
#include "libcommon/httpc.h"
#include "libcommon/deps.h"
#include "libcommon/log.h"
#include "libcommon/plaintext.h"
#include "libcommon/svc_options.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#define SVC_MAX_CHECKS 16

struct svc_check {
    char name[32];
    svc_check_fn fn; /* NULL: a dependency's state (dep) */
    svc_dep_fn dep;
    void *ctx;
};

struct svc {
    const svc_spec *spec;
    char producer[128];
    http_router *router;
    http_server *http;
    metrics *metrics;
    kbus *bus;
    pg_pool *pg;
    pthread_key_t rds_key;
    struct svc_check checks[SVC_MAX_CHECKS];
    int n_checks;
    atomic_bool started;  /* spec->start returned true */
    atomic_bool draining; /* SIGTERM seen */
    int64_t start_wall_ms;
    svcauth_table access;
    unsigned deps_mask; /* 1 << deps_id of what the service uses */
    void *data;
};

/* ---- accessors ---------------------------------------------------------- */

const svc_spec *svc_spec_of(svc *s)
{
    return s->spec;
}
const char *svc_instance(svc *s)
{
    (void)s;
    return svc_opts.instance;
}
http_router *svc_router(svc *s)
{
    return s->router;
}
metrics *svc_metrics(svc *s)
{
    return s->metrics;
}
kbus *svc_bus(svc *s)
{
    return s->bus;
}
pg_pool *svc_pg(svc *s)
{
    return s->pg;
}
const char *svc_redis_url(svc *s)
{
    (void)s;
    return svc_opts.redis_url;
}
void *svc_data(svc *s)
{
    return s->data;
}
void svc_set_data(svc *s, void *data)
{
    s->data = data;
}
const char *svc_producer(svc *s)
{
    return s->producer;
}

void svc_add_check(svc *s, const char *name, svc_check_fn fn, void *ctx)
{
    if (s->n_checks >= SVC_MAX_CHECKS)
        ts_panic("too many readiness checks (max %d)", SVC_MAX_CHECKS);
    struct svc_check *c = &s->checks[s->n_checks++];
    ts_strlcpy(c->name, name, sizeof(c->name));
    c->fn = fn;
    c->ctx = ctx;
}

void svc_add_dependency(svc *s, const char *name, svc_dep_fn fn, void *ctx)
{
    svc_add_check(s, name, NULL, ctx);
    s->checks[s->n_checks - 1].dep = fn;
}

const char *svc_listen(svc *s)
{
    (void)s;
    return svc_opts.http_listen;
}

bool svc_http_tls(svc *s)
{
    (void)s;
    return svc_opts.http_tls_cert && *svc_opts.http_tls_cert && svc_opts.http_tls_key &&
           *svc_opts.http_tls_key;
}

static void rds_key_free(void *p)
{
    rds_free(p);
}

rds *svc_redis(svc *s, ts_err *err)
{
    if (!(s->spec->needs & SVC_NEEDS_REDIS)) {
        ts_err_set(err, "service %s does not use Redis", s->spec->name);
        return NULL;
    }
    rds *r = pthread_getspecific(s->rds_key);
    if (r) return r;
    r = rds_connect(svc_opts.redis_url, (int)svc_opts.redis_timeout_ms, err);
    if (r) pthread_setspecific(s->rds_key, r);
    return r;
}

/* ---- health endpoints ---------------------------------------------------- */

static void h_healthz(http_req *req, http_resp *resp, void *ctx)
{
    (void)req;
    svc *s = ctx;
    json_t *body = json_pack("{s:s, s:s, s:s}", "status", "ok", "service", s->spec->name, "version",
                             TESSERA_VERSION);
    http_reply_json(resp, 200, body);
}

static bool check_pg(svc *s, void *ctx, ts_err *err)
{
    (void)ctx;
    return pg_pool_ping(s->pg, err);
}

static bool check_redis(svc *s, void *ctx, ts_err *err)
{
    (void)ctx;
    rds *r = svc_redis(s, err);
    return r && rds_ping(r, err);
}

static bool check_kafka(svc *s, void *ctx, ts_err *err)
{
    (void)ctx;
    return kbus_ping(s->bus, 2000, err);
}

static bool check_consumers(svc *s, void *ctx, ts_err *err)
{
    (void)ctx;
    ts_err why = {{0}};
    int n = kbus_paused(s->bus, &why);
    if (n == 0) return true;
    ts_err_set(err, "%d consumer%s paused: %s", n, n == 1 ? "" : "s", why.msg);
    return false;
}

/* The bus consumers' probe: the dependency checks of /readyz, failing only
 * for a dependency judged down (deps.h). A check that failed while its
 * dependency is still only failing (slow, within the window) passes: the
 * consumer repeats its try instead of pausing (kbus.h). */
static bool _probe_one(bool ok, deps_id dep, ts_err *err)
{
    if (ok || !deps_is_down(dep)) return true;
    ts_err_prefix(err, "%s", deps_name(dep));
    return false;
}

static bool probe_deps(void *ctx, ts_err *err)
{
    svc *s = ctx;
    if (s->pg && !_probe_one(check_pg(s, NULL, err), DEP_POSTGRESQL, err)) return false;
    if ((s->spec->needs & SVC_NEEDS_REDIS) &&
        !_probe_one(check_redis(s, NULL, err), DEP_REDIS, err))
        return false;
    return !s->bus || _probe_one(check_kafka(s, NULL, err), DEP_KAFKA, err);
}

static void h_readyz(http_req *req, http_resp *resp, void *ctx)
{
    (void)req;
    svc *s = ctx;
    bool ok = true;
    json_t *checks = json_object();
    if (atomic_load(&s->draining)) {
        ok = false;
        json_object_set_new(checks, "lifecycle", json_string("draining"));
    } else if (!atomic_load(&s->started)) {
        ok = false;
        json_object_set_new(checks, "lifecycle", json_string("starting"));
    }
    json_t *deps = json_object();
    if (s->pg && atomic_load(&s->started))
        json_object_set_new(deps, "postgresql", depinfo_pg(s->pg));
    if ((s->spec->needs & SVC_NEEDS_REDIS) && atomic_load(&s->started)) {
        ts_err err = {{0}};
        json_object_set_new(deps, "redis", depinfo_redis(svc_redis(s, &err), err.msg));
    }
    for (int i = 0; i < s->n_checks && atomic_load(&s->started); i++) {
        ts_err err = {{0}};
        if (!s->checks[i].fn) {
            json_object_set_new(deps, s->checks[i].name, s->checks[i].dep(s, s->checks[i].ctx));
        } else if (s->checks[i].fn(s, s->checks[i].ctx, &err)) {
            json_object_set_new(checks, s->checks[i].name, json_string("ok"));
        } else {
            ok = false;
            json_object_set_new(checks, s->checks[i].name,
                                json_string(err.msg[0] ? err.msg : "failed"));
        }
    }
    json_t *body = json_pack("{s:s, s:s, s:o, s:o}", "status", ok ? "ready" : "not-ready",
                             "service", s->spec->name, "checks", checks, "dependencies", deps);
    http_reply_json(resp, ok ? 200 : 503, body);
}

static void h_metrics(http_req *req, http_resp *resp, void *ctx)
{
    (void)req;
    svc *s = ctx;
    size_t len;
    char *text = metrics_render(s->metrics, &len);
    http_reply(resp, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
    free(text);
}

static void collect_process(FILE *out, void *ctx)
{
    svc *s = ctx;
    char labels[160];
    snprintf(labels, sizeof(labels), "service=\"%s\",version=\"%s\"", s->spec->name,
             TESSERA_VERSION);
    metrics_family(out, "tessera_build_info", "gauge", "Build information; the value is always 1.");
    metrics_sample(out, "tessera_build_info", labels, 1);
    metrics_gauge(out, "tessera_process_start_time_seconds",
                  "Start time of the process since the Unix epoch in seconds.",
                  (double)s->start_wall_ms / 1000.0);
    metrics_gauge(out, "tessera_ready", "1 when the service finished starting and is not draining.",
                  atomic_load(&s->started) && !atomic_load(&s->draining) ? 1 : 0);
}

static void collect_http(FILE *out, void *ctx)
{
    svc *s = ctx;
    if (!s->http) return;
    http_server_stats st;
    http_server_get_stats(s->http, &st);
    metrics_family(out, "tessera_http_requests_total", "counter",
                   "HTTP requests answered, by status class.");
    metrics_sample_u64(out, "tessera_http_requests_total", "code=\"2xx\"", st.status_2xx);
    metrics_sample_u64(out, "tessera_http_requests_total", "code=\"3xx\"", st.status_3xx);
    metrics_sample_u64(out, "tessera_http_requests_total", "code=\"4xx\"", st.status_4xx);
    metrics_sample_u64(out, "tessera_http_requests_total", "code=\"5xx\"", st.status_5xx);
    metrics_counter(out, "tessera_http_request_body_too_large_total",
                    "Requests refused because their body exceeded http.max_body.",
                    st.body_too_large);
    metrics_counter(out, "tessera_http_connections_steered_total",
                    "New connections given to an idle worker thread because theirs was busy "
                    "in a handler.",
                    st.steered);
    metrics_family(out, "tessera_http_request_duration_seconds_total", "counter",
                   "Total time spent answering HTTP requests.");
    metrics_sample(out, "tessera_http_request_duration_seconds_total", NULL,
                   (double)st.latency_us_sum / 1e6);
    metrics_gauge(out, "tessera_http_inflight_requests", "HTTP requests being answered now.",
                  http_server_inflight(s->http));
}

static void collect_kafka(FILE *out, void *ctx)
{
    svc *s = ctx;
    if (s->bus) kbus_collect(out, s->bus);
}

/* Load the service credentials the configuration names, and refuse a
 * configuration that leaves a service unable to call or to be called. */
static bool load_service_auth(const svc_spec *spec, ts_err *err)
{
    if (!httpc_set_ca_file(svc_opts.http_ca_file, err)) return false;
    bool needs_trust = false;
    for (size_t i = 0; !spec->public_api && i < spec->n_access; i++)
        needs_trust = needs_trust || spec->access[i].callers != SVCAUTH_PUBLIC;
    if (spec->calls_services && !*svc_opts.svcauth_key_file) {
        ts_err_set(err,
                   "service_auth.key_file is not set: tessera-%s signs its calls to other "
                   "services with its own key (make one with tessera-%s --new-service-key FILE)",
                   spec->name, spec->name);
        return false;
    }
    if (needs_trust && !*svc_opts.svcauth_trust_file) {
        ts_err_set(err,
                   "service_auth.trust_file is not set: tessera-%s accepts internal calls only "
                   "from services whose public keys it lists",
                   spec->name);
        return false;
    }
    if (!svcauth_load(spec->name, svc_opts.svcauth_key_file,
                      needs_trust ? svc_opts.svcauth_trust_file : "", svc_opts.svcauth_max_skew_ms,
                      err))
        return false;
    if (needs_trust && svcauth_trusted_keys() == 0) {
        ts_err_set(err, "%s lists no service key: nobody could call tessera-%s",
                   svc_opts.svcauth_trust_file, spec->name);
        return false;
    }
    return true;
}

/* ---- command line -------------------------------------------------------- */

static void usage(const svc_spec *spec, const cfg_schema *schema, FILE *out)
{
    fprintf(out,
            "tessera-%s %s: %s\n\n"
            "Usage: tessera-%s [--config FILE] [options]\n\n"
            "  -c, --config FILE          read configuration from FILE (also TESSERA_CONFIG)\n"
            "      --new-service-key FILE write a new service key for tessera-%s to FILE (0600,\n"
            "                             never overwritten) and print its trust-file line\n"
            "      --service-public-key FILE  print the trust-file line of a service key\n"
            "      --check-config         load and validate the configuration, then exit\n"
            "      --print-config         print the effective configuration (secrets masked)\n"
            "      --print-config-example print an example configuration file\n"
            "  -V, --version              print the version\n"
            "  -h, --help                 this help\n\n"
            "Configuration options (file keys; environment names override the file):\n\n",
            spec->name, TESSERA_VERSION, spec->summary, spec->name, spec->name);
    cfg_print_help(schema, out);
    fprintf(out, "\nSignals: SIGTERM/SIGINT drain and exit 0; SIGHUP reloads reloadable options.\n"
                 "Endpoints: GET /healthz, /readyz, /metrics (open to all; every other "
                 "internal route\nneeds a service credential: docs/internal-api.md).\n");
}

static void fill_instance(void)
{
    if (svc_opts.instance && svc_opts.instance[0]) return;
    char host[256] = "localhost";
    gethostname(host, sizeof(host) - 1);
    free(svc_opts.instance);
    svc_opts.instance = ts_strdup(host);
}

/* ---- start-up steps ------------------------------------------------------ */

/* Plain text to another host only where it is allowed (plaintext.h). */
static bool check_plaintext(const svc_spec *spec, ts_err *err)
{
    if ((spec->needs & SVC_NEEDS_PG) &&
        !plaintext_check_pg(svc_opts.pg_dsn, svc_opts.pg_allow_plaintext, err))
        return false;
    if ((spec->needs & SVC_NEEDS_REDIS) &&
        !plaintext_check_redis(svc_opts.redis_url, svc_opts.redis_allow_plaintext, err))
        return false;
    return !(spec->needs & SVC_NEEDS_KAFKA) ||
           plaintext_check_kafka(svc_opts.kafka_bootstrap, svc_opts.kafka_security_protocol,
                                 svc_opts.kafka_allow_plaintext, err);
}

static bool _set(const char *v)
{
    return v && *v;
}

/* An internal listener on an address that is not loopback serves TLS, or
 * plain text there is allowed (plaintext.h); the gateway's public one is not
 * checked (a load balancer in front often terminates TLS). */
static bool check_http_plaintext(const svc_spec *spec, ts_err *err)
{
    if (spec->public_api) return true;
    /* one set without the other: http_server_start says what is wrong */
    bool tls = _set(svc_opts.http_tls_cert) || _set(svc_opts.http_tls_key);
    return plaintext_check_http("http.listen", svc_opts.http_listen, tls,
                                svc_opts.http_allow_plaintext, err) &&
           plaintext_check_http("http.shared_listen", svc_opts.http_shared_listen, tls,
                                svc_opts.http_allow_plaintext, err);
}

static bool connect_deps(svc *s, ts_err *err)
{
    const svc_spec *spec = s->spec;
    if (!check_plaintext(spec, err)) return false;
    if (spec->needs & SVC_NEEDS_PG) {
        s->pg = pg_pool_new(svc_opts.pg_dsn, (int)svc_opts.pg_pool_size,
                            (int)svc_opts.pg_connect_timeout_ms, svc_opts.pg_prepare, err);
        if (!s->pg) {
            ts_err_prefix(err, "PostgreSQL");
            return false;
        }
        if (spec->pg_schema) {
            PGconn *conn = pg_pool_get(s->pg, 10000, err);
            if (!conn) return false;
            bool ok = pg_migrate(conn, spec->pg_schema, spec->migrations, spec->n_migrations, err);
            pg_pool_put(s->pg, conn);
            if (!ok) {
                ts_err_prefix(err, "schema %s", spec->pg_schema);
                return false;
            }
        }
        svc_add_check(s, "postgresql", check_pg, NULL);
    }
    if (spec->needs & SVC_NEEDS_REDIS) {
        /* Connect once now so a wrong URL fails start-up with its reason. */
        if (!svc_redis(s, err)) {
            ts_err_prefix(err, "Redis %s", svc_opts.redis_url);
            return false;
        }
        svc_add_check(s, "redis", check_redis, NULL);
    }
    if (spec->needs & SVC_NEEDS_KAFKA) {
        kbus_opts o = {
            .bootstrap = svc_opts.kafka_bootstrap,
            .service = spec->name,
            .instance = svc_opts.instance,
            .linger_ms = (int)svc_opts.kafka_linger_ms,
            .max_attempts = (int)svc_opts.kafka_max_attempts,
            .retry_backoff_ms = (int)svc_opts.kafka_retry_backoff_ms,
            .fetch_wait_ms = (int)svc_opts.kafka_fetch_wait_ms,
            .control_fetch_wait_ms = (int)svc_opts.kafka_control_fetch_wait_ms,
            .session_timeout_ms = (int)svc_opts.kafka_session_timeout_ms,
            .pause_max_backoff_ms = (int)svc_opts.kafka_pause_max_backoff_ms,
            .message_timeout_ms = (int)svc_opts.kafka_message_timeout_ms,
            .security_protocol = svc_opts.kafka_security_protocol,
            .ssl_ca_file = svc_opts.kafka_ssl_ca_file,
        };
        s->bus = kbus_new(&o, err);
        if (!s->bus) {
            ts_err_prefix(err, "Kafka %s", svc_opts.kafka_bootstrap);
            return false;
        }
        svc_add_check(s, "kafka", check_kafka, NULL);
        kbus_set_probe(s->bus, probe_deps, s);
        svc_add_check(s, "consumers", check_consumers, NULL);
    }
    return true;
}

/* http_server_opts.guard for a public API: the spec's public_guard. */
static bool public_guard(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    return s->spec->public_guard(s, req, resp);
}

static void on_complete(const http_req *req, int status, int64_t latency_us, void *ctx)
{
    svc *s = ctx;
    if (s->spec->on_request) s->spec->on_request(s, req, status, latency_us);
}

static void apply_deps_policy(void)
{
    deps_set_policy(&(deps_policy){.failures = (int)svc_opts.deps_down_after_failures,
                                   .window_ms = (int)svc_opts.deps_down_after_ms});
}

static void notify(const char *state)
{
    sd_notify(0, state);
}

/* Wait for a signal; SIGHUP reloads, SIGTERM/SIGINT return. */
static void wait_for_stop(const svc_spec *spec, const cfg_schema *schema, const char *config_path,
                          const sigset_t *set)
{
    for (;;) {
        int sig = sigwaitinfo(set, NULL);
        if (sig < 0) {
            if (errno == EINTR) continue;
            ts_panic("sigwaitinfo: %s", strerror(errno));
        }
        if (sig == SIGHUP) {
            notify("RELOADING=1");
            char *restart = NULL;
            ts_err err = {{0}};
            if (!cfg_reload(schema, config_path, &restart, &err)) {
                TLOG_ERROR("config reload failed; keeping the old values", "error=\"%s\"", err.msg);
            } else {
                if (!tlog_set_level(svc_opts.log_level))
                    TLOG_WARN("bad log level after reload", "level=%s", svc_opts.log_level);
                apply_deps_policy();
                if (!load_service_auth(spec, &err))
                    TLOG_ERROR("service credentials not reloaded; keeping the old ones",
                               "error=\"%s\"", err.msg);
                TLOG_INFO("config reloaded", "restart_needed=\"%s\"", restart ? restart : "");
            }
            free(restart);
            notify("READY=1");
            continue;
        }
        TLOG_INFO("stopping", "signal=%s", strsignal(sig));
        return;
    }
}

static void drain(svc *s)
{
    atomic_store(&s->draining, true);
    notify("STOPPING=1");
    if (s->http) {
        http_server_quiesce(s->http);
        int64_t deadline = ts_now_mono_ms() + svc_opts.drain_timeout_ms;
        while (http_server_inflight(s->http) > 0 && ts_now_mono_ms() < deadline)
            usleep(10000);
        if (http_server_inflight(s->http) > 0)
            TLOG_WARN("drain timeout: closing with requests in flight", "inflight=%d",
                      http_server_inflight(s->http));
    }
    if (s->spec->stop && atomic_load(&s->started)) s->spec->stop(s);
    if (s->http) {
        http_server_stop(s->http);
        s->http = NULL;
    }
    if (s->bus) {
        kbus_close(s->bus, 5000);
        s->bus = NULL;
    }
    if (s->pg) {
        pg_pool_free(s->pg);
        s->pg = NULL;
    }
}

/* What the command line asked for. */
typedef struct svc_args {
    const char *config_path; /* --config or TESSERA_CONFIG; NULL: none */
    bool check_only;         /* --check-config */
    bool print_effective;    /* --print-config */
} svc_args;

/* The option tables this service reads: the common ones, those of its
 * dependencies, its own. tables holds at least 6. */
static void build_schema(const svc_spec *spec, const cfg_option **tables, cfg_schema *schema)
{
    svc_common_table[2].def = spec->default_listen;
    int nt = 0;
    tables[nt++] = svc_common_table;
    if (spec->needs & SVC_NEEDS_PG) tables[nt++] = svc_pg_table;
    if (spec->needs & SVC_NEEDS_REDIS) tables[nt++] = svc_redis_table;
    if (spec->needs & SVC_NEEDS_KAFKA) tables[nt++] = svc_kafka_table;
    if (spec->options) tables[nt++] = spec->options;
    tables[nt] = NULL;
    *schema = (cfg_schema){.service = spec->name, .tables = tables};
}

/* The command line into a; false when it was answered here (--help,
 * --version, a key, an error) with *rc the exit code. */
static bool parse_args(int argc, char **argv, const svc_spec *spec, const cfg_schema *schema,
                       svc_args *a, int *rc)
{
    enum { OPT_CHECK = 256, OPT_PRINT, OPT_EXAMPLE, OPT_NEW_KEY, OPT_PUBLIC_KEY };
    static const struct option longopts[] = {
        {"new-service-key", required_argument, NULL, OPT_NEW_KEY},
        {"service-public-key", required_argument, NULL, OPT_PUBLIC_KEY},
        {"config", required_argument, NULL, 'c'},
        {"check-config", no_argument, NULL, OPT_CHECK},
        {"print-config", no_argument, NULL, OPT_PRINT},
        {"print-config-example", no_argument, NULL, OPT_EXAMPLE},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *a = (svc_args){.config_path = getenv("TESSERA_CONFIG")};
    *rc = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, "c:Vh", longopts, NULL)) != -1) {
        switch (opt) {
        case 'c':
            a->config_path = optarg;
            break;
        case OPT_CHECK:
            a->check_only = true;
            break;
        case OPT_PRINT:
            a->print_effective = true;
            break;
        case OPT_EXAMPLE:
            cfg_print_example(schema, stdout);
            return false;
        case OPT_NEW_KEY:
        case OPT_PUBLIC_KEY: {
            ts_err kerr = {{0}};
            bool ok = opt == OPT_NEW_KEY ? svcauth_new_key(spec->name, optarg, stdout, &kerr)
                                         : svcauth_public_line(optarg, stdout, &kerr);
            if (!ok) fprintf(stderr, "tessera-%s: %s\n", spec->name, kerr.msg);
            *rc = ok ? 0 : 1;
            return false;
        }
        case 'V':
            printf("tessera-%s %s\n", spec->name, TESSERA_VERSION);
            return false;
        case 'h':
            usage(spec, schema, stdout);
            return false;
        default:
            fprintf(stderr, "tessera-%s: try --help\n", spec->name);
            *rc = 2;
            return false;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "tessera-%s: unexpected argument '%s'; try --help\n", spec->name,
                argv[optind]);
        *rc = 2;
        return false;
    }
    if (a->config_path && !a->config_path[0]) a->config_path = NULL;
    return true;
}

/* The configuration loaded and applied (log level, dependency policy,
 * service credentials); false when the process ends here (an error,
 * --check-config, --print-config) with *rc the exit code. */
static bool load_config(const svc_spec *spec, cfg_schema *schema, const svc_args *a, int *rc)
{
    tlog_init(spec->name, NULL);
    ts_err err = {{0}};
    if (!cfg_load(schema, a->config_path, &err)) {
        fprintf(stderr, "tessera-%s: configuration error: %s\n", spec->name, err.msg);
        *rc = 2;
        return false;
    }
    fill_instance();
    if (!tlog_set_level(svc_opts.log_level)) ts_panic("log.level passed validation but is unknown");
    apply_deps_policy();
    *rc = 0;
    if (!load_service_auth(spec, &err)) {
        fprintf(stderr, "tessera-%s: configuration error: %s\n", spec->name, err.msg);
        *rc = 2;
    } else if (a->check_only) {
        printf("tessera-%s: configuration OK%s%s\n", spec->name, a->config_path ? " in " : "",
               a->config_path ? a->config_path : "");
    } else if (a->print_effective) {
        cfg_print_effective(schema, stdout);
    } else {
        tlog_init(spec->name, svc_opts.instance);
        return true;
    }
    cfg_free(schema);
    return false;
}

/* The service record with its router, metrics and health routes. */
static svc *svc_new(const svc_spec *spec)
{
    svc *s = ts_calloc(1, sizeof(*s));
    s->spec = spec;
    s->start_wall_ms = ts_now_wall_ms();
    snprintf(s->producer, sizeof(s->producer), "%s/%s", spec->name, svc_opts.instance);
    pthread_key_create(&s->rds_key, rds_key_free);
    s->router = http_router_new();
    s->metrics = metrics_new();
    metrics_add(s->metrics, collect_process, s);
    metrics_add(s->metrics, collect_http, s);
    metrics_add(s->metrics, collect_kafka, s);
    if (!spec->public_api) metrics_add(s->metrics, svcauth_collect, NULL);
    s->deps_mask = ((spec->needs & SVC_NEEDS_PG) ? 1u << DEP_POSTGRESQL : 0) |
                   ((spec->needs & SVC_NEEDS_REDIS) ? 1u << DEP_REDIS : 0) |
                   ((spec->needs & SVC_NEEDS_KAFKA) ? 1u << DEP_KAFKA : 0);
    if (s->deps_mask) metrics_add(s->metrics, deps_collect, &s->deps_mask);
    if (spec->needs & SVC_NEEDS_PG) metrics_add(s->metrics, pg_collect, NULL);
    http_route(s->router, "GET", "/healthz", h_healthz, s);
    http_route(s->router, "GET", "/readyz", h_readyz, s);
    http_route(s->router, "GET", "/metrics", h_metrics, s);
    return s;
}

/* The HTTP server on http.listen, guarded by service credentials (internal
 * services) or the spec's public guard. */
static bool start_http(svc *s, ts_err *err)
{
    const svc_spec *spec = s->spec;
    http_server_opts hopts = {
        .listen = svc_opts.http_listen,
        .max_body = (size_t)svc_opts.http_max_body,
        .threads = (int)svc_opts.http_threads,
        .conn_timeout_s = (int)(svc_opts.http_idle_timeout_ms / 1000),
        .header_timeout_ms = (int)svc_opts.http_header_timeout_ms,
        .body_timeout_ms = (int)svc_opts.http_body_timeout_ms,
        .service = spec->name,
        .tls_cert_file = svc_opts.http_tls_cert,
        .tls_key_file = svc_opts.http_tls_key,
        .on_complete = on_complete,
        .on_complete_ctx = s,
    };
    s->access = (svcauth_table){.rules = spec->access, .n_rules = spec->n_access};
    if (!spec->public_api) {
        hopts.guard = svcauth_guard;
        hopts.guard_ctx = &s->access;
    } else if (spec->public_guard) {
        hopts.guard = public_guard;
        hopts.guard_ctx = s;
    }
    if (!check_http_plaintext(spec, err)) return false;
    s->http = http_server_start(&hopts, s->router, err);
    if (!s->http) return false;
    TLOG_INFO("serving HTTP", "listen=%s port=%d version=%s", svc_opts.http_listen,
              http_server_port(s->http), TESSERA_VERSION);
    return true;
}

/* The start-up steps in order (docs/architecture.md, "The service
 * runtime"): the spec's routes, HTTP, the dependencies, the spec's start,
 * the shared listener. A failure is logged with its step. */
static bool start_service(svc *s)
{
    const svc_spec *spec = s->spec;
    ts_err err = {{0}};
    if (spec->routes && !spec->routes(s, &err)) {
        TLOG_ERROR("start-up failed", "step=routes error=\"%s\"", err.msg);
        return false;
    }
    if (!start_http(s, &err)) {
        TLOG_ERROR("start-up failed", "step=http listen=%s error=\"%s\"", svc_opts.http_listen,
                   err.msg);
        return false;
    }
    if (!connect_deps(s, &err)) {
        TLOG_ERROR("start-up failed", "step=dependencies error=\"%s\"", err.msg);
        return false;
    }
    if (spec->start && !spec->start(s, &err)) {
        TLOG_ERROR("start-up failed", "step=start error=\"%s\"", err.msg);
        return false;
    }
    atomic_store(&s->started, true);
    const char *shared = svc_opts.http_shared_listen;
    if (*shared && !http_server_share(s->http, shared, &err)) {
        TLOG_ERROR("start-up failed", "step=http shared_listen=%s error=\"%s\"", shared, err.msg);
        return false;
    }
    notify("READY=1");
    TLOG_INFO("ready", "shared_listen=%s", shared);
    return true;
}

int svc_main(int argc, char **argv, const svc_spec *spec)
{
    /* Block the signals we wait for before any thread exists, so every thread
     * inherits the mask and only sigwaitinfo sees them. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    const cfg_option *tables[6];
    cfg_schema schema;
    build_schema(spec, tables, &schema);
    svc_args args;
    int rc;
    if (!parse_args(argc, argv, spec, &schema, &args, &rc) ||
        !load_config(spec, &schema, &args, &rc))
        return rc;
    svc *s = svc_new(spec);
    if (start_service(s))
        wait_for_stop(spec, &schema, args.config_path, &set);
    else
        rc = 1;
    drain(s);
    TLOG_INFO("stopped", "exit_code=%d", rc);
    http_router_free(s->router);
    metrics_free(s->metrics);
    cfg_free(&schema);
    free(s);
    return rc;
}
