/* status.c: GET /admin/status (status.h): one thread per target, all with
 * the same deadline; libcommon's HTTP client, without credentials (the
 * probed endpoints are open). */
#include "status.h"

#include "proxy.h"
#include "status_report.h"
#include "verify.h"

#include "libcommon/httpc.h"
#include "libcommon/log.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static status_target g_targets[STATUS_MAX_TARGETS];
static size_t g_n_targets;

bool status_init(gateway *gw, ts_err *err)
{
    return status_targets_parse(gw->status_targets, g_targets, STATUS_MAX_TARGETS, &g_n_targets,
                                err);
}

typedef struct job {
    status_probe p;
    int64_t deadline_ms; /* monotonic */
    pthread_t th;
    bool running;
} job;

/* GET <url><path> within what is left before the deadline: true when it
 * answered (status and JSON body, if any, in *status, *out). */
static bool probe_get(httpc *c, const job *j, const char *path, long *status, json_t **out,
                      char *why, size_t why_len)
{
    int64_t left = j->deadline_ms - ts_now_mono_ms();
    if (left <= 0) {
        snprintf(why, why_len, "no time left (the status timeout passed)");
        return false;
    }
    char *url = ts_asprintf("%s%s", j->p.t.url, path);
    httpc_call call = {.timeout_ms = (int)left, .max_body = 256 * 1024};
    httpc_resp r = {0};
    ts_err err = {{0}};
    bool ok = httpc_request_ex(c, &call, "GET", url, NULL, NULL, 0, NULL, &r, &err);
    if (ok) {
        *status = r.status;
        *out = r.body_len ? json_loadb(r.body, r.body_len, 0, NULL) : NULL;
    } else {
        snprintf(why, why_len, "%s", r.timed_out ? "no answer in time" : err.msg);
    }
    httpc_resp_free(&r);
    free(url);
    return ok;
}

static void *probe_main(void *arg)
{
    job *j = arg;
    status_probe *p = &j->p;
    httpc *c = httpc_new(1000);
    httpc_trust_internal(c);
    int64_t t0 = ts_now_mono_ms();
    p->reached =
        probe_get(c, j, "/healthz", &p->health_status, &p->health, p->error, sizeof(p->error));
    p->latency_ms = ts_now_mono_ms() - t0;
    if (p->reached && p->health_status == 200 &&
        !probe_get(c, j, "/readyz", &p->ready_status, &p->ready, p->error, sizeof(p->error)))
        p->ready_status = 0;
    httpc_free(c);
    return NULL;
}

static void job_start(job *j)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    j->running = pthread_create(&j->th, &attr, probe_main, j) == 0;
    pthread_attr_destroy(&attr);
    if (!j->running) snprintf(j->p.error, sizeof(j->p.error), "could not start a probe thread");
}

static void target(job *j, const char *name, const char *kind, const char *url, int64_t deadline)
{
    ts_strlcpy(j->p.t.name, name, sizeof(j->p.t.name));
    ts_strlcpy(j->p.t.kind, kind, sizeof(j->p.t.kind));
    ts_strlcpy(j->p.t.url, url, sizeof(j->p.t.url));
    size_t len = strlen(j->p.t.url);
    while (len > 1 && j->p.t.url[len - 1] == '/')
        j->p.t.url[--len] = '\0';
    j->deadline_ms = deadline;
}

/* The gateway's own address from http.listen: a wildcard host is loopback. */
static void own_url(gateway *gw, char *out, size_t n)
{
    const char *listen = svc_listen(gw->svc);
    const char *colon = strrchr(listen, ':');
    const char *port = colon ? colon + 1 : "8090";
    size_t hlen = colon ? (size_t)(colon - listen) : strlen(listen);
    if (hlen == 0 || (hlen == 7 && strncmp(listen, "0.0.0.0", 7) == 0))
        snprintf(out, n, "http://127.0.0.1:%s", port);
    else if (hlen == 4 && strncmp(listen, "[::]", 4) == 0)
        snprintf(out, n, "http://[::1]:%s", port);
    else
        snprintf(out, n, "http://%.*s:%s", (int)hlen, listen, port);
}

/* The agents the registry lists, as the caller: ALIVE ones with an address
 * become jobs (from *n on, up to max); the others (LOST) are rows of their
 * own in extra. False with why when the list could not be read. */
static bool agent_jobs(gateway *gw, http_req *req, const gw_identity *id, job *jobs, size_t *n,
                       size_t max, int64_t deadline, json_t *extra, char *why, size_t why_len)
{
    int64_t left = deadline - ts_now_mono_ms();
    long status = 0;
    json_t *out = NULL;
    ts_err err = {{0}};
    if (left <= 0 ||
        !proxy_fetch_json(&gw->up[UPSTREAM_REGISTRY], left, "GET", req,
                          "/v1/admin/agents?limit=1000", id, NULL, &status, &out, &err)) {
        snprintf(why, why_len, "%s", left <= 0 ? "no time left" : err.msg);
        return false;
    }
    if (status != 200 || !json_is_array(json_object_get(out, "items"))) {
        snprintf(why, why_len, "tessera-registry answered %ld", status);
        json_decref(out);
        return false;
    }
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(out, "items"), i, a)
    {
        const char *aid = json_string_value(json_object_get(a, "id"));
        const char *addr = json_string_value(json_object_get(a, "addr"));
        const char *st = json_string_value(json_object_get(a, "status"));
        if (!aid || !st || strcmp(st, "TERMINATED") == 0) continue;
        if (strcmp(st, "ALIVE") == 0 && addr && *addr && *n < max) {
            memset(&jobs[*n], 0, sizeof(jobs[*n]));
            target(&jobs[(*n)++], aid, "agent", addr, deadline);
            continue;
        }
        char e[160];
        snprintf(e, sizeof(e), "unreachable: %s",
                 strcmp(st, "ALIVE") == 0 ? "not probed (more agents than the limit)"
                                          : "the registry lists it as lost");
        json_array_append_new(extra,
                              json_pack("{s:s, s:s, s:s?, s:s, s:b, s:{}, s:{}, s:n, s:n, "
                                        "s:s}",
                                        "service", aid, "kind", "agent", "address", addr, "state",
                                        "unreachable", "ready", false, "checks", "failed_checks",
                                        "version", "latency_ms", "error", e));
    }
    json_decref(out);
    return true;
}

/* ?timeout= (seconds, > 0 and at most STATUS_MAX_TIMEOUT_MS) and
 * ?agents=true|false. False after a 400. */
static bool parse_query(gateway *gw, http_req *req, http_resp *resp, int64_t *timeout_ms,
                        bool *agents)
{
    *timeout_ms = gw->status_timeout_ms;
    *agents = true;
    const char *t = http_query_arg(req, "timeout");
    if (t) {
        char *end = NULL;
        double s = strtod(t, &end);
        if (!*t || *end || !(s > 0) || s * 1000 > STATUS_MAX_TIMEOUT_MS) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "timeout must be a number of seconds above 0 and at most %d",
                         STATUS_MAX_TIMEOUT_MS / 1000);
            return false;
        }
        *timeout_ms = (int64_t)(s * 1000) ?: 1;
    }
    const char *a = http_query_arg(req, "agents");
    if (a && strcmp(a, "true") != 0 && strcmp(a, "false") != 0) {
        http_problem(resp, 400, "invalid-api-params", NULL, "agents must be true or false");
        return false;
    }
    *agents = !a || strcmp(a, "true") == 0;
    return true;
}

static void h_status(http_req *req, http_resp *resp, void *ctx)
{
    gateway *gw = ctx;
    gw_identity id;
    if (!verify_request(gw, req, resp, &id)) return;
    if (strcmp(id.role, "superadmin") != 0) {
        http_problem(resp, 403, "forbidden", NULL, "only superadmins may read the platform status");
        return;
    }
    int64_t timeout_ms;
    bool want_agents;
    if (!parse_query(gw, req, resp, &timeout_ms, &want_agents)) return;
    int64_t t0 = ts_now_mono_ms(), deadline = t0 + timeout_ms;
    size_t max = 1 + UPSTREAM_COUNT + g_n_targets + STATUS_MAX_AGENTS, n = 0;
    job *jobs = ts_calloc(max, sizeof(job));
    char self[STATUS_URL_MAX];
    own_url(gw, self, sizeof(self));
    target(&jobs[n++], "gateway", "service", self, deadline);
    for (int u = 0; u < UPSTREAM_COUNT; u++)
        target(&jobs[n++], gw->up[u].name, "service", gw->up[u].url, deadline);
    for (size_t i = 0; i < g_n_targets; i++)
        target(&jobs[n++], g_targets[i].name, "service", g_targets[i].url, deadline);
    for (size_t i = 0; i < n; i++)
        job_start(&jobs[i]);
    /* meanwhile, the agents from the registry (same deadline) */
    size_t fixed = n;
    json_t *extra = json_array();
    char agents_error[300] = "";
    if (want_agents && !agent_jobs(gw, req, &id, jobs, &n, max, deadline, extra, agents_error,
                                   sizeof(agents_error)))
        TLOG_WARN("status: agents not listed", "error=\"%s\"", agents_error);
    for (size_t i = fixed; i < n; i++)
        job_start(&jobs[i]);
    json_t *services = json_array();
    bool all_ready = true;
    for (size_t i = 0; i < n; i++) {
        if (jobs[i].running) pthread_join(jobs[i].th, NULL);
        json_t *row = status_row(&jobs[i].p);
        all_ready = all_ready && json_is_true(json_object_get(row, "ready"));
        json_array_append_new(services, row);
    }
    all_ready = all_ready && json_array_size(extra) == 0 && !agents_error[0];
    json_array_extend(services, extra);
    json_decref(extra);
    status_probe *probes = ts_calloc(n ? n : 1, sizeof(status_probe));
    for (size_t i = 0; i < n; i++)
        probes[i] = jobs[i].p;
    json_t *body =
        json_pack("{s:s, s:s, s:I, s:I, s:o, s:o}", "status", all_ready ? "ok" : "degraded",
                  "version", TESSERA_VERSION, "timeout_ms", (json_int_t)timeout_ms, "elapsed_ms",
                  (json_int_t)(ts_now_mono_ms() - t0), "services", services, "dependencies",
                  status_dependencies(probes, n));
    json_object_set_new(body, "agents_error",
                        agents_error[0] ? json_string(agents_error) : json_null());
    for (size_t i = 0; i < n; i++)
        status_probe_clear(&jobs[i].p);
    free(probes);
    free(jobs);
    http_reply_json(resp, 200, body);
}

void status_routes(gateway *gw)
{
    /* an exact segment beats /admin/{a}, which goes to tessera-auth */
    http_route(svc_router(gw->svc), "GET", "/admin/status", h_status, gw);
}
