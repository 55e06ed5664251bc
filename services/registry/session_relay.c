/* session_relay.c: execute, logs and app starts of a session, relayed to the
 * agent that runs its main kernel, or the kernel ?kernel= names (main1,
 * sub1, ... or a kernel id) (the agent's internal HTTP API, docs/internal-api.md).
 * The registry only finds the kernel and its agent; the agent runs the code,
 * caps output and time, and answers in Backend.AI's shape, which is relayed
 * as it is. Files (upload, download, download_single, files) go the same
 * way: the body with its Content-Type and the query as they came; the
 * answer with its Content-Type and Content-Disposition. */
#include "session_relay.h"

#include "caller.h"
#include "idle_network.h"
#include "session_cluster.h"
#include "sessions.h"

#include "libcommon/exec_req.h"
#include "libcommon/httpc.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"

#include <stdlib.h>
#include <string.h>

/* The agent's own limit is agent.exec_timeout (60 s by default); this one
 * only has to outlast it. */
#define RELAY_TIMEOUT_MS 75000

typedef struct main_kernel {
    char kernel_id[TS_UUID_STRLEN + 8];
    char agent_url[256];
} main_kernel;

/* The running kernel of session id a request names (?kernel= or
 * ?kernel_id=: a kernel name such as sub1, or a kernel id; none: the main
 * kernel) and its agent's base URL; false after a problem answer. */
static bool find_kernel(PGconn *conn, http_resp *resp, const char *id, const char *name,
                        main_kernel *out)
{
    const char *p[] = {id, name && *name ? name : NULL};
    PGresult *r = pgjson_query(
        conn, resp, "find kernel",
        "SELECT s.status, k.id::text, k.status, coalesce(a.addr, ''), coalesce(k.agent_id, ''),"
        " " SESSION_KERNEL_NAME_SQL " FROM registry.sessions s"
        " LEFT JOIN registry.kernels k ON k.session_id = s.id"
        " LEFT JOIN registry.agents a ON a.id = k.agent_id"
        " WHERE s.id = $1::uuid AND ($2::text IS NULL OR k.id::text = lower($2)"
        "  OR " SESSION_KERNEL_NAME_SQL " = $2)"
        " ORDER BY (k.cluster_role = 'main') DESC, k.cluster_idx LIMIT 1",
        2, p);
    if (!r) return false;
    bool ok = false;
    const char *session_status = PQntuples(r) ? PQgetvalue(r, 0, 0) : "";
    if (PQntuples(r) != 1 && name && *name) {
        http_problem(resp, 404, "kernel-not-found", NULL,
                     "session %s has no kernel %s (main1, sub1, ... or a kernel id)", id, name);
    } else if (PQntuples(r) != 1 || PQgetisnull(r, 0, 1)) {
        http_problem(resp, 404, "session-not-found", NULL, "session %s has no kernel", id);
    } else if (strcmp(session_status, "RUNNING") != 0) {
        http_problem(resp, 409, "invalid-session-state", "Session is not running",
                     "session %s is %s; execute, logs, apps and files need a RUNNING session", id,
                     session_status);
    } else if (!PQgetvalue(r, 0, 3)[0]) {
        http_problem(resp, 503, "agent-unavailable", NULL, "the agent %s of session %s is unknown",
                     PQgetvalue(r, 0, 4), id);
    } else {
        const char *addr = PQgetvalue(r, 0, 3);
        /* AgentStarted.addr is "http://host:port" (older agents: "host:port"). */
        snprintf(out->agent_url, sizeof(out->agent_url), "%s%s",
                 strncmp(addr, "http://", 7) == 0 || strncmp(addr, "https://", 8) == 0 ? ""
                                                                                       : "http://",
                 addr);
        ts_strlcpy(out->kernel_id, PQgetvalue(r, 0, 1), sizeof(out->kernel_id));
        tlog_ctx_kernel(out->kernel_id);
        ok = true;
    }
    PQclear(r);
    return ok;
}

/* The query without its kernel= and kernel_id= arguments (the registry's,
 * not the agent's); heap. */
static char *agent_query(const char *q)
{
    char *out = ts_strdup("");
    while (q && *q) {
        size_t n = strcspn(q, "&");
        size_t k = strcspn(q, "=&");
        bool ours =
            (k == 6 && strncmp(q, "kernel", 6) == 0) || (k == 9 && strncmp(q, "kernel_id", 9) == 0);
        if (n && !ours) {
            char *next = ts_asprintf("%s%s%.*s", out, *out ? "&" : "", (int)n, q);
            free(out);
            out = next;
        }
        q += n;
        if (*q == '&') q++;
    }
    return out;
}

/* pass_problems: the agent's own 5xx problem answers are relayed as they are
 * (an app start says why it failed); otherwise a 5xx becomes a 502. */
static void relay(http_req *req, http_resp *resp, svc *s, const char *method, const char *what,
                  bool pass_problems)
{
    ts_caller c;
    if (!caller_get(req, resp, NULL, &c)) return;
    PGconn *conn = pgjson_get(s, resp);
    char id[TS_UUID_STRLEN];
    main_kernel k;
    const char *kname = http_query_arg(req, "kernel");
    if (!kname || !*kname) kname = http_query_arg(req, "kernel_id");
    bool found =
        conn && sessions_find(conn, req, resp, &c, id) && find_kernel(conn, resp, id, kname, &k);
    pgjson_put(s, conn);
    caller_free(&c);
    if (!found) return;
    /* Use for the idle checker: all but reading the logs (a console may poll them). */
    ts_err aerr = {{0}};
    if (strcmp(what, "logs") != 0 && !idle_mark_active(id, &aerr))
        TLOG_WARN("activity not recorded", "error=\"%s\"", aerr.msg);

    /* The query and the body's own Content-Type travel as they came (an
     * upload is multipart/form-data), and a download keeps its file name. */
    char *query = agent_query(req->query);
    char *url = ts_asprintf("%s/v1/kernels/%s/%s%s%s", k.agent_url, k.kernel_id, what,
                            query[0] ? "?" : "", query);
    free(query);
    const char *ct = http_header(req, "Content-Type");
    char *ct_line = ts_asprintf("Content-Type: %s", ct && *ct ? ct : "application/json");
    const char *headers[] = {ct_line, NULL};
    static const char *const keep[] = {"Content-Disposition", NULL};
    httpc_call call = {.timeout_ms = RELAY_TIMEOUT_MS, .keep_headers = keep};
    httpc *h = httpc_new_internal(RELAY_TIMEOUT_MS);
    httpc_resp r = {0};
    ts_err err = {{0}};
    if (!httpc_request_ex(h, &call, method, url, headers, req->body_len ? req->body : NULL,
                          req->body_len, req->request_id, &r, &err)) {
        TLOG_WARN("agent did not answer", "url=%s error=\"%s\"", url, err.msg);
        http_problem(resp, 503, "agent-unavailable", NULL,
                     "the agent running session %s did not answer", id);
    } else if ((!r.content_type && r.status != 204) ||
               (r.status >= 500 &&
                !(pass_problems && strstr(r.content_type, "application/problem+json")))) {
        http_problem(resp, 502, "agent-error", NULL, "the agent running session %s answered %ld",
                     id, r.status);
    } else {
        http_reply(resp, (int)r.status, r.status == 204 ? NULL : r.content_type,
                   r.status == 204 ? NULL : r.body, r.status == 204 ? 0 : r.body_len);
        for (size_t i = 0; i < r.n_headers; i++)
            http_set_header(resp, r.header_names[i], r.header_values[i]);
    }
    httpc_resp_free(&r);
    httpc_free(h);
    free(ct_line);
    free(url);
}

/* The body is checked here, before anything is looked up (exec_req.h), and
 * relayed as it came. */
static void h_execute(http_req *req, http_resp *resp, void *ctx)
{
    if (!req->body_len) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "execute needs a JSON body {mode, runId, code, options}");
        return;
    }
    json_t *body = http_json_body(req, resp);
    if (!body) return;
    exec_req er;
    int status;
    ts_err err = {{0}};
    bool ok = exec_req_parse(body, &er, &status, &err);
    json_decref(body);
    if (!ok) {
        http_problem(resp, status, status == 413 ? "request-too-large" : "invalid-api-params", NULL,
                     "%s", err.msg);
        return;
    }
    relay(req, resp, ctx, "POST", "execute", false);
}

static void h_logs(http_req *req, http_resp *resp, void *ctx)
{
    relay(req, resp, ctx, "GET", "logs", false);
}

/* POST /v1/sessions/{id}/apps/{app}/start: the agent starts the app unless it
 * is listening (docs/agent.md, "Apps"). */
/* Whether app is a service port name: 1 to 64 of A-Z a-z 0-9 . _ -; false
 * with a 400 problem. */
static bool _app_name_ok(const char *app, http_resp *resp)
{
    size_t n = app ? strlen(app) : 0;
    bool ok = n >= 1 && n <= 64;
    for (size_t i = 0; ok && i < n; i++)
        ok = (app[i] >= 'a' && app[i] <= 'z') || (app[i] >= 'A' && app[i] <= 'Z') ||
             (app[i] >= '0' && app[i] <= '9') || strchr("._-", app[i]);
    if (!ok)
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "the app must be 1 to 64 of A-Z a-z 0-9 . _ - (a service port name)");
    return ok;
}

static void h_app_start(http_req *req, http_resp *resp, void *ctx)
{
    const char *app = http_param(req, "app");
    if (!_app_name_ok(app, resp)) return;
    char *what = ts_asprintf("apps/%s/start", app);
    relay(req, resp, ctx, "POST", what, true);
    free(what);
}

/* POST /v1/sessions/{id}/shutdown-service {"service_name"} or
 * ?service_name= (Backend.AI's shutdown-service): the agent stops the app
 * (POST .../apps/{app}/stop); 204 whether it was running or not. */
static void h_shutdown_service(http_req *req, http_resp *resp, void *ctx)
{
    /* the JSON body's, else the query's (Backend.AI's SDK 21 sends
     * ?service_name= without a body) */
    json_t *body = NULL;
    if (req->body_len && !(body = http_json_body(req, resp))) return;
    const json_t *v = json_object_get(body, "service_name");
    if (!v) v = json_object_get(body, "service");
    const char *name = v ? json_string_value(v) : http_query_arg(req, "service_name");
    if (!name) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "service_name is required: the name of one of the session's service ports");
    } else if (_app_name_ok(name, resp)) {
        char *what = ts_asprintf("apps/%s/stop", name);
        relay(req, resp, ctx, "POST", what, true);
        free(what);
        if (http_resp_status(resp) == 200) http_reply(resp, 204, NULL, NULL, 0);
    }
    json_decref(body);
}

/* POST /v1/sessions/{id}/upload, GET|POST .../download and .../download_single,
 * GET .../files: the main kernel's /home/work (the agent's kernel_files.h). */
static void h_upload(http_req *req, http_resp *resp, void *ctx)
{
    relay(req, resp, ctx, "POST", "files/upload", false);
}

static void h_download(http_req *req, http_resp *resp, void *ctx)
{
    relay(req, resp, ctx, req->method, "files/download", false);
}

static void h_download_single(http_req *req, http_resp *resp, void *ctx)
{
    relay(req, resp, ctx, req->method, "files/download_single", false);
}

static void h_files(http_req *req, http_resp *resp, void *ctx)
{
    relay(req, resp, ctx, "GET", "files", false);
}

void session_relay_routes(svc *s)
{
    http_route(svc_router(s), "POST", "/v1/sessions/{id}/execute", h_execute, s);
    http_route(svc_router(s), "GET", "/v1/sessions/{id}/logs", h_logs, s);
    http_route(svc_router(s), "POST", "/v1/sessions/{id}/apps/{app}/start", h_app_start, s);
    http_route(svc_router(s), "POST", "/v1/sessions/{id}/shutdown-service", h_shutdown_service, s);
    http_route(svc_router(s), "POST", "/v1/sessions/{id}/upload", h_upload, s);
    http_route(svc_router(s), "GET", "/v1/sessions/{id}/download", h_download, s);
    http_route(svc_router(s), "POST", "/v1/sessions/{id}/download", h_download, s);
    http_route(svc_router(s), "GET", "/v1/sessions/{id}/download_single", h_download_single, s);
    http_route(svc_router(s), "POST", "/v1/sessions/{id}/download_single", h_download_single, s);
    http_route(svc_router(s), "GET", "/v1/sessions/{id}/files", h_files, s);
}
