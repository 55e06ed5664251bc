/* svc.h: the life of a Tessera service process, shared by every daemon.
 *
 * svc_main(): parse the command line (--config, --help, --version,
 * --print-config-example, --check-config), load the config (the common table,
 * the dependency tables the service needs, and its own), then:
 *   1. spec->routes(): the service adds its HTTP routes (before serving);
 *   2. serve HTTP: /healthz, /readyz, /metrics plus the service's routes;
 *   3. connect what the service needs (PostgreSQL with backoff and migrations,
 *      Redis, the Kafka bus);
 *   4. spec->start(): consumers, background work;
 *   5. sd_notify READY=1; wait for SIGTERM/SIGINT (SIGHUP reloads config);
 *   6. sd_notify STOPPING=1; stop accepting, let in-flight requests finish (up
 *      to shutdown.drain_timeout), spec->stop(), flush the bus, exit 0.
 * /readyz answers 200 only after step 4 and while every dependency check
 * passes; its JSON body names each check and why it failed.
 *
 * Service credentials (svcauth.h): the process loads service_auth.key_file
 * (its own key: required when spec->calls_services) and
 * service_auth.trust_file (the callers' public keys: required when the access
 * table has a rule that is not public) at start and on SIGHUP. Unless
 * spec->public_api, the HTTP server refuses every request that the access
 * table does not allow (/healthz, /readyz and /metrics are always open).
 * `--new-service-key FILE` writes a new key for this service and prints its
 * trust line; `--service-public-key FILE` prints the trust line of a key. */
#ifndef TESSERA_SVC_H
#define TESSERA_SVC_H

#include "libcommon/common.h"
#include "libcommon/config.h"
#include "libcommon/http.h"
#include "libcommon/kbus.h"
#include "libcommon/metrics.h"
#include "libcommon/pg.h"
#include "libcommon/rds.h"
#include "libcommon/svcauth.h"

enum svc_needs {
    SVC_NEEDS_PG = 1 << 0,
    SVC_NEEDS_REDIS = 1 << 1,
    SVC_NEEDS_KAFKA = 1 << 2,
};

typedef struct svc svc;

typedef struct svc_spec {
    const char *name;           /* "gateway" -> binary tessera-gateway */
    const char *summary;        /* one line for --help */
    const char *default_listen; /* "127.0.0.1:8090" */
    unsigned needs;             /* enum svc_needs */
    const cfg_option *options;  /* the service's own table, or NULL */
    const char *pg_schema;      /* schema the service owns (SVC_NEEDS_PG) */
    const pg_migration *migrations;
    size_t n_migrations;
    bool (*routes)(svc *s, ts_err *err);
    bool (*start)(svc *s, ts_err *err);
    void (*stop)(svc *s);
    /* Who may call which route (svcauth.h): ignored when public_api. */
    const svcauth_rule *access;
    size_t n_access;
    bool public_api;     /* the gateway: its clients are people, not services */
    bool calls_services; /* signs internal calls: needs service_auth.key_file */
    /* After every HTTP response (health endpoints included), on the worker
     * thread; may be NULL. */
    void (*on_request)(svc *s, const http_req *req, int status, int64_t latency_us);
    /* A public API's own guard (http_server_opts.guard), before routing:
     * false when it answered the request itself (resp holds the answer);
     * it may also set headers every answer carries (CORS). May be NULL. */
    bool (*public_guard)(svc *s, http_req *req, http_resp *resp);
} svc_spec;

int svc_main(int argc, char **argv, const svc_spec *spec);

/* For the hooks. */
const svc_spec *svc_spec_of(svc *s);
const char *svc_instance(svc *s);
http_router *svc_router(svc *s);
metrics *svc_metrics(svc *s);
kbus *svc_bus(svc *s);   /* NULL unless SVC_NEEDS_KAFKA */
pg_pool *svc_pg(svc *s); /* NULL unless SVC_NEEDS_PG */
const char *svc_redis_url(svc *s);
/* Thread-local Redis connection for the calling thread (SVC_NEEDS_REDIS). */
rds *svc_redis(svc *s, ts_err *err);
void *svc_data(svc *s);
void svc_set_data(svc *s, void *data);

/* A readiness check: true when fine, else err says why. */
typedef bool (*svc_check_fn)(svc *s, void *ctx, ts_err *err);
void svc_add_check(svc *s, const char *name, svc_check_fn fn, void *ctx);
/* Something the service can work without (an OCI registry): its state in
 * /readyz's "dependencies" object (PostgreSQL's and Redis's versions are
 * there already), never a check. fn answers a new JSON object
 * {"status": "ok" | "<why not>", ...} (depinfo.h). */
typedef json_t *(*svc_dep_fn)(svc *s, void *ctx);
void svc_add_dependency(svc *s, const char *name, svc_dep_fn fn, void *ctx);
/* The http.listen address ("127.0.0.1:8090"). */
const char *svc_listen(svc *s);
/* Whether http.listen serves TLS (http.tls_cert and http.tls_key set). */
bool svc_http_tls(svc *s) TS_MUST_CHECK;

/* The producer name used in envelopes: "<service>/<instance>". */
const char *svc_producer(svc *s);

#endif
