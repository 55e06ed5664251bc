/* sessions.c: the public session API and the registry's admin resources,
 * forwarded to tessera-registry (see sessions.h for the route map). */
#include "sessions.h"

#include "libcommon/httpc.h"
#include "libcommon/log.h"
#include "proxy.h"
#include "session_apps.h"
#include "verify.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const PREFIXES[] = {"/session", "/kernel"};

/* ---- targets ------------------------------------------------------------------------ */

/* "/v1/sessions" + the raw path after the public prefix (its first segment),
 * without a trailing slash, + suffix + "?query". Segments keep their
 * percent-encoding, so a name travels exactly as the client wrote it. */
static char *_session_target(const http_req *req, const char *suffix)
{
    const char *o = proxy_origin(req);
    size_t plen = strcspn(o, "?#");
    const char *q = o[plen] == '?' ? o + plen : "";
    size_t qlen = strcspn(q, "#");
    const char *rest = o + 1 + strcspn(o + 1, "/?#"); /* after "/session" */
    size_t rlen = (size_t)(o + plen - rest);
    while (rlen && rest[rlen - 1] == '/')
        rlen--;
    return ts_asprintf("/v1/sessions%.*s%s%.*s", (int)rlen, rest, suffix, (int)qlen, q);
}

static upstream *_registry(void *ctx)
{
    return &((gateway *)ctx)->up[UPSTREAM_REGISTRY];
}

/* Forward req, with its body, to the registry's target within timeout_ms. */
static void _forward(void *ctx, http_req *req, http_resp *resp, int64_t timeout_ms,
                     const char *target, const gw_identity *id)
{
    proxy_forward(_registry(ctx), timeout_ms, req, resp, target, id, req->body, req->body_len);
}

/* verify_request for a route on the session {name} (NULL: none), which goes
 * into the log context. */
static bool _verify(void *ctx, http_req *req, http_resp *resp, const char *name, gw_identity *id)
{
    if (name) tlog_ctx_entity("session_name", name);
    return verify_request(ctx, req, resp, id);
}

/* A signed request on the session {name}, forwarded to its path under
 * /v1/sessions + suffix. */
static void _on_session(void *ctx, http_req *req, http_resp *resp, const char *suffix,
                        int64_t timeout_ms)
{
    gw_identity id;
    if (!_verify(ctx, req, resp, http_param(req, "name"), &id)) return;
    char *target = _session_target(req, suffix);
    _forward(ctx, req, resp, timeout_ms, target, &id);
    free(target);
}

/* ---- create --------------------------------------------------------------------------- */

/* A JSON boolean, or Backend.AI's string forms of one ("true", "1", "yes"). */
static bool _truthy(const json_t *v)
{
    if (json_is_boolean(v)) return json_is_true(v);
    if (json_is_integer(v)) return json_integer_value(v) != 0;
    const char *s = json_string_value(v);
    return s && (strcasecmp(s, "true") == 0 || strcmp(s, "1") == 0 || strcasecmp(s, "yes") == 0);
}

/* maxWaitSeconds as a number of seconds (numbers may arrive as strings); -1 when
 * absent or unreadable (the registry then uses its default or refuses it). */
static double _max_wait(const json_t *body)
{
    const json_t *v = json_object_get(body, "maxWaitSeconds");
    if (!v) v = json_object_get(body, "max_wait_seconds");
    double d = -1;
    if (json_is_number(v)) {
        d = json_number_value(v);
    } else if (json_is_string(v)) {
        char *end = NULL;
        d = strtod(json_string_value(v), &end);
        if (end == json_string_value(v) || *end) d = -1;
    }
    return isfinite(d) && d >= 0 ? d : -1;
}

int64_t sessions_create_timeout_ms(const json_t *body)
{
    const json_t *eo = json_object_get(body, "enqueueOnly");
    if (!eo) eo = json_object_get(body, "enqueue_only");
    if (_truthy(eo)) return SESSIONS_TIMEOUT_MS;
    double wait = _max_wait(body);
    /* 0 is Backend.AI's "no limit": the registry waits its longest */
    if (wait <= 0 || wait > SESSIONS_MAX_WAIT_S) wait = SESSIONS_MAX_WAIT_S;
    int64_t ms = (int64_t)ceil(wait + SESSIONS_WAIT_MARGIN_S) * 1000;
    return ms > SESSIONS_TIMEOUT_MS ? ms : SESSIONS_TIMEOUT_MS;
}

/* POST /session, POST /session/_/create. */
static void h_create(http_req *req, http_resp *resp, void *ctx)
{
    gw_identity id;
    if (!_verify(ctx, req, resp, NULL, &id)) return;
    json_t *body = http_json_body(req, resp); /* 400 when not a JSON object */
    if (!body) return;
    int64_t timeout = sessions_create_timeout_ms(body);
    json_decref(body);
    _forward(ctx, req, resp, timeout, "/v1/sessions", &id);
}

/* ---- the others ---------------------------------------------------------------------- */

/* GET|DELETE|PATCH /session/{name}, GET /session/{name}/history and /status-history,
 * POST /session/{name}/rename,
 * GET /session/{name}/logs: the same path under /v1/sessions. */
static void h_same_path(http_req *req, http_resp *resp, void *ctx)
{
    _on_session(ctx, req, resp, "", SESSIONS_TIMEOUT_MS);
}

/* GET /session: "mine" (the signing keypair's sessions) unless ?all is given
 * (true, 1, yes or no value): then everything the caller may see (the
 * registry scopes it: users their own, domain admins their domain,
 * superadmins all). An explicit owner / owner_access_key is kept as it is. */
static void h_list(http_req *req, http_resp *resp, void *ctx)
{
    gw_identity id;
    if (!_verify(ctx, req, resp, NULL, &id)) return;
    char *query = ts_strdup("");
    bool all = false, owner = false;
    const char *q = req->query;
    while (*q) {
        size_t n = strcspn(q, "&");
        size_t nlen = strcspn(q, "=&");
        if (nlen == 3 && strncmp(q, "all", 3) == 0) {
            const char *v = q[nlen] == '=' ? q + nlen + 1 : "";
            size_t vlen = n > nlen ? n - nlen - 1 : 0;
            all = !((vlen == 5 && strncasecmp(v, "false", 5) == 0) || (vlen == 1 && v[0] == '0') ||
                    (vlen == 2 && strncasecmp(v, "no", 2) == 0));
        } else if (n > 0) {
            if ((nlen == 5 && strncmp(q, "owner", 5) == 0) ||
                (nlen == 16 && strncmp(q, "owner_access_key", 16) == 0))
                owner = true;
            char *next = ts_asprintf("%s%s%.*s", query, *query ? "&" : "", (int)n, q);
            free(query);
            query = next;
        }
        q += n;
        if (*q == '&') q++;
    }
    if (!all && !owner) {
        char *next = ts_asprintf("%s%sowner=%s", query, *query ? "&" : "", id.access_key);
        free(query);
        query = next;
    }
    char *target = ts_asprintf("/v1/sessions%s%s", *query ? "?" : "", query);
    _forward(ctx, req, resp, SESSIONS_TIMEOUT_MS, target, &id);
    free(target);
    free(query);
}

/* POST /session/{name}: execute. */
static void h_execute(http_req *req, http_resp *resp, void *ctx)
{
    _on_session(ctx, req, resp, "/execute", SESSIONS_EXEC_TIMEOUT_MS);
}

/* POST /session/{name}/upload (multipart/form-data, bounded by http.max_body),
 * GET|POST /session/{name}/download and /download_single, GET
 * /session/{name}/files: the same path under /v1/sessions, with the time an
 * execute gets (the agent reads or writes the files). */
static void h_files(http_req *req, http_resp *resp, void *ctx)
{
    _on_session(ctx, req, resp, "", SESSIONS_EXEC_TIMEOUT_MS);
}

/* GET /session/_/logs?session_name=: Backend.AI's task logs, as text/plain.
 * Also its other names for the session: sessionName, task_id and taskId
 * (Backend.AI's Python client: a session id). */
static void h_task_logs(http_req *req, http_resp *resp, void *ctx)
{
    static const char *const keys[] = {"session_name", "sessionName", "task_id", "taskId"};
    const char *name = NULL;
    for (size_t i = 0; i < TS_ARRAY_LEN(keys) && (!name || !*name); i++)
        name = http_query_arg(req, keys[i]);
    gw_identity id;
    if (!_verify(ctx, req, resp, name && *name ? name : NULL, &id)) return;
    if (!name || !*name) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "session_name is required (the batch session whose logs to read)");
        return;
    }
    char *ename = httpc_escape(name);
    char *target = ts_asprintf("/v1/sessions/%s/logs", ename);
    free(ename);
    proxy_forward(_registry(ctx), SESSIONS_TIMEOUT_MS, req, resp, target, &id, NULL, 0);
    free(target);
    if (http_resp_status(resp) != 200) return;
    size_t len = 0;
    const char *text = http_resp_body(resp, &len);
    json_t *answer = text ? json_loadb(text, len, 0, NULL) : NULL;
    const json_t *logs = json_object_get(json_object_get(answer, "result"), "logs");
    if (json_is_string(logs))
        http_reply(resp, 200, "text/plain; charset=utf-8", json_string_value(logs),
                   json_string_length(logs));
    json_decref(answer);
}

/* GET /session/{name}/dependency-graph: Backend.AI's graph of the sessions
 * this one waits for. Tessera has no session dependencies: the session
 * alone, in Backend.AI's form (status as Python prints its enum, the time
 * as it prints a datetime), which its CLI's show-graph reads. */
static void h_dependency_graph(http_req *req, http_resp *resp, void *ctx)
{
    gw_identity id;
    if (!_verify(ctx, req, resp, http_param(req, "name"), &id)) return;
    char *ename = httpc_escape(http_param(req, "name"));
    char *target = ts_asprintf("/v1/sessions/%s%s%s", ename, req->query[0] ? "?" : "", req->query);
    free(ename);
    json_t *s = NULL;
    bool ok = proxy_call_json(_registry(ctx), SESSIONS_TIMEOUT_MS, "GET", req, resp, target, &id,
                              NULL, 200, &s);
    free(target);
    if (!ok) return;
    const char *status = json_string_value(json_object_get(s, "status"));
    const char *changed = json_string_value(json_object_get(s, "statusChangedAt"));
    char *kstatus = ts_asprintf("KernelStatus.%s", status ? status : "UNKNOWN");
    char *when = ts_strdup(changed ? changed : "None");
    char *t = strchr(when, 'T');
    if (t) *t = ' ';
    http_reply_json(resp, 200,
                    json_pack("{s:O, s:O, s:s, s:s, s:[]}", "session_id",
                              json_object_get(s, "sessionUuid"), "session_name",
                              json_object_get(s, "sessionName"), "status", kstatus,
                              "status_changed", when, "depends_on"));
    free(kstatus);
    free(when);
    json_decref(s);
}

/* body's "port" as a number (numbers may arrive as strings): 0 when absent, -1
 * when not a port. */
static json_int_t _port_arg(const json_t *body)
{
    const json_t *v = json_object_get(body, "port");
    if (!v || json_is_null(v)) return 0;
    json_int_t n = -1;
    if (json_is_integer(v)) {
        n = json_integer_value(v);
    } else if (json_is_string(v) && json_string_length(v) > 0) {
        char *end = NULL;
        long long l = strtoll(json_string_value(v), &end, 10);
        n = *end ? -1 : (json_int_t)l;
    }
    return n >= 1 && n <= 65535 ? n : -1;
}

/* POST /session/{name}/start-service {app, port?}: a wsproxy route to an app of
 * the caller's RUNNING session (docs/internal-api.md, tessera-wsproxy). */
static void h_start_service(http_req *req, http_resp *resp, void *ctx)
{
    gw_identity id;
    if (!_verify(ctx, req, resp, http_param(req, "name"), &id)) return;
    json_t *body = http_json_body(req, resp); /* 400 when not a JSON object */
    if (!body) return;
    const json_t *app_v = json_object_get(body, "app");
    if (app_v && !json_is_null(app_v) && !json_is_string(app_v)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "app must be a string (the name of one of the session's service ports)");
        json_decref(body);
        return;
    }
    const char *app = json_string_value(app_v);
    const json_t *kernel_v = json_object_get(body, "kernel");
    if (kernel_v && !json_is_null(kernel_v) && !json_is_string(kernel_v)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "kernel must be a string (main1, sub1, ... or a kernel id)");
        json_decref(body);
        return;
    }
    const char *kernel = json_string_value(kernel_v);
    if (!kernel) kernel = http_query_arg(req, "kernel");
    json_int_t port = _port_arg(body);
    if (port < 0 || ((!app || !*app) && port == 0)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     port < 0 ? "port must be a number from 1 to 65535"
                              : "app is required (the name of one of the session's service ports)");
        json_decref(body);
        return;
    }
    /* The session, as the caller may see it (the registry scopes it). */
    json_t *info = NULL;
    session_app sa;
    if (session_apps_running(ctx, req, resp, &id, http_param(req, "name"), "apps can be opened",
                             &info) &&
        session_apps_start(ctx, req, resp, &id, info, kernel, app, port, &sa)) {
        char *tgt = strchr(sa.host, ':') ? ts_asprintf("[%s]:%d", sa.host, sa.host_port)
                                         : ts_asprintf("%s:%d", sa.host, sa.host_port);
        json_t *route = json_pack("{s:s, s:s, s:s, s:s, s:s}", "user_id", id.user_id, "session_id",
                                  sa.sid, "app", sa.name, "protocol", sa.protocol, "target", tgt);
        free(tgt);
        json_t *made = NULL;
        bool ok = proxy_call_json(&((gateway *)ctx)->up[UPSTREAM_WSPROXY], SESSIONS_TIMEOUT_MS,
                                  "POST", req, resp, "/v1/routes", NULL, route, 201, &made);
        json_decref(route);
        const char *url = json_string_value(json_object_get(made, "url"));
        const char *token = json_string_value(json_object_get(made, "token"));
        if (ok && (!url || !token)) {
            http_problem(resp, 502, "bad-gateway", NULL,
                         "tessera-wsproxy answered without a token or url");
        } else if (ok) {
            /* wsproxy_addr: the URL without its path ("http://host:port"). */
            const char *scheme = strstr(url, "://");
            size_t alen =
                scheme ? (size_t)(scheme + 3 - url) + strcspn(scheme + 3, "/?#") : strlen(url);
            http_reply_json(resp, 200,
                            json_pack("{s:s, s:s%, s:s, s:s, s:s}", "token", token, "wsproxy_addr",
                                      url, alen, "url", url, "app", sa.name, "protocol",
                                      sa.protocol));
        }
        json_decref(made);
    }
    json_decref(info);
    json_decref(body);
}

/* /admin/{resource-groups,agents,images,resource-presets}[/...] -> registry /v1/admin/... */
static void h_admin(http_req *req, http_resp *resp, void *ctx)
{
    gw_identity id;
    if (!_verify(ctx, req, resp, NULL, &id)) return;
    char *target = proxy_v1_target(req);
    bool scan = strcmp(req->method, "POST") == 0 &&
                strncmp(req->path, "/admin/images/scan", 18) == 0 &&
                (req->path[18] == '\0' || req->path[18] == '/');
    _forward(ctx, req, resp, scan ? SESSIONS_SCAN_TIMEOUT_MS : SESSIONS_TIMEOUT_MS, target, &id);
    free(target);
}

/* ---- wiring ---------------------------------------------------------------------------- */

void sessions_routes(gateway *gw)
{
    http_router *r = svc_router(gw->svc);
    for (size_t i = 0; i < TS_ARRAY_LEN(PREFIXES); i++) {
        char pat[64];
#define ROUTE(method, suffix, h)                                                                   \
    do {                                                                                           \
        snprintf(pat, sizeof(pat), "%s%s", PREFIXES[i], suffix);                                   \
        http_route(r, method, pat, h, gw);                                                         \
    } while (0)
        ROUTE("POST", "", h_create);
        ROUTE("POST", "/_/create", h_create);
        ROUTE("GET", "", h_list);
        ROUTE("GET", "/{name}", h_same_path);
        ROUTE("DELETE", "/{name}", h_same_path);
        ROUTE("PATCH", "/{name}", h_same_path);
        ROUTE("POST", "/{name}", h_execute);
        ROUTE("GET", "/{name}/logs", h_same_path);
        ROUTE("GET", "/_/logs", h_task_logs);
        ROUTE("GET", "/{name}/history", h_same_path);
        ROUTE("GET", "/{name}/status-history", h_same_path);
        ROUTE("GET", "/{name}/dependency-graph", h_dependency_graph);
        ROUTE("POST", "/{name}/rename", h_same_path);
        ROUTE("POST", "/{name}/start-service", h_start_service);
        ROUTE("POST", "/{name}/shutdown-service", h_same_path);
        ROUTE("POST", "/{name}/upload", h_files);
        ROUTE("GET", "/{name}/download", h_files);
        ROUTE("POST", "/{name}/download", h_files);
        ROUTE("GET", "/{name}/download_single", h_files);
        ROUTE("POST", "/{name}/download_single", h_files);
        ROUTE("GET", "/{name}/files", h_files);
#undef ROUTE
    }
    /* Exact segments beat auth's /admin/{a}...: these resources go to the registry. */
    static const char *const admin[] = {
        "/admin/resource-groups", "/admin/resource-groups/{a}", "/admin/resource-groups/{a}/{b}",
        "/admin/agents",          "/admin/agents/{a}",          "/admin/agents/{a}/{b}",
        "/admin/images",          "/admin/images/{a}",          "/admin/images/{a}/{b}",
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(admin); i++)
        http_route(r, "*", admin[i], h_admin, gw);
    http_route(r, "*", "/admin/resource-presets", h_admin, gw);
    http_route(r, "*", "/admin/resource-presets/{a}", h_admin, gw);
}
