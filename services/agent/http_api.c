/* http_api.c: the agent's internal HTTP API (http_api.h). */
#include "services/agent/http_api.h"

#include <stdlib.h>
#include <string.h>

#include "libcommon/exec_req.h"
#include "libcommon/log.h"
#include "libcommon/utf8.h"
#include "services/agent/app_start.h"

#define LOGS_DEFAULT_MAX (1 << 20)

/* A JSON string of bytes that may not be UTF-8: invalid bytes become '?'. */
static json_t *_text(const char *b, size_t n)
{
    json_t *j = json_stringn(b, n);
    if (j) return j;
    char *c = ts_malloc(n + 1);
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t len = utf8_decode(b + i, n - i, &cp);
        if (len && cp != 0) {
            memcpy(c + i, b + i, len);
            i += len;
        } else {
            c[i++] = '?';
        }
    }
    j = json_stringn(c, n);
    free(c);
    return j ? j : json_string("");
}

typedef const http_api_agent agent;

static agent *_agent(http_req *req, http_resp *resp, const http_api_source *src)
{
    agent *a = src->get(src->ctx);
    if (!a) {
        http_problem(resp, 503, "service-unavailable", "Not ready", "the agent is starting");
        return NULL;
    }
    tlog_ctx_agent(a->agent_id);
    const char *id = http_param(req, "id");
    if (kernels_valid_id(id)) tlog_ctx_kernel(id); /* another is no kernel's: not logged */
    return a;
}

static json_t *_view_json(const kernel_view *v)
{
    json_t *ports = json_array();
    for (int i = 0; i < v->n_ports; i++)
        json_array_append_new(ports, json_pack("{s:s, s:s, s:i, s:i}", "name", v->ports[i].name,
                                               "protocol", v->ports[i].protocol, "container_port",
                                               v->ports[i].container_port, "host_port",
                                               v->ports[i].host_port));
    json_t *devs = json_array();
    for (int i = 0; i < v->n_devices; i++)
        json_array_append_new(
            devs, json_pack("{s:s, s:s, s:s}", "device_id", v->devices[i].device_id, "slot_name",
                            v->devices[i].slot_name, "amount", v->devices[i].amount));
    json_t *j =
        json_pack("{s:s, s:s, s:s, s:i, s:o, s:o, s:o}", "kernel_id", v->kernel_id, "session_id",
                  v->session_id, "status", v->status, "generation", v->generation, "slots",
                  slots_to_json(&v->slots), "devices", devs, "service_ports", ports);
    if (strcmp(v->status, "exited") == 0 || strcmp(v->status, "terminated") == 0) {
        json_object_set_new(j, "exit_code", json_integer(v->exit_code));
        json_object_set_new(j, "reason", json_string(v->reason));
    }
    return j;
}

static void h_agent(http_req *req, http_resp *resp, void *ctx)
{
    agent *a = _agent(req, resp, ctx);
    if (!a) return;
    const node_info *n = a->node;
    json_t *devs = json_array();
    for (int i = 0; i < n->n_devices; i++)
        json_array_append_new(
            devs, json_pack("{s:s, s:s, s:s, s:s, s:I, s:b}", "device_id", n->devices[i].id,
                            "model", n->devices[i].model, "bus_id", n->devices[i].bus_id, "uuid",
                            n->devices[i].uuid, "memory_bytes",
                            (json_int_t)n->devices[i].memory_bytes, "mock", n->devices[i].mock));
    http_reply_json(resp, 200,
                    json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:I, s:o, s:o, s:s}", "agent_id",
                              a->agent_id, "resource_group", a->resource_group, "addr", a->addr,
                              "hostname", n->hostname, "architecture", n->architecture, "host_cpus",
                              n->host_cpus, "host_mem_bytes", (json_int_t)n->host_mem_bytes,
                              "slots", slots_to_json(&n->capacity), "devices", devs, "gpu_note",
                              n->gpu_note));
}

static void h_list(http_req *req, http_resp *resp, void *ctx)
{
    agent *a = _agent(req, resp, ctx);
    if (!a) return;
    kernel_view *v = NULL;
    int n = kernels_snapshot(a->ks, true, &v);
    json_t *arr = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(arr, _view_json(&v[i]));
    kernel_views_free(v);
    http_reply_json(resp, 200,
                    json_pack("{s:s, s:s, s:o}", "agent_id", a->agent_id, "kernel_host",
                              a->kernel_host, "kernels", arr));
}

/* The kernel named in the path (its session into the log context), or a
 * 404 problem (false). */
static bool _kernel(agent *a, http_req *req, http_resp *resp, kernel_view *v)
{
    const char *id = http_param(req, "id");
    if (!id || !kernels_get(a->ks, id, v)) {
        http_problem(resp, 404, "kernel-not-found", "Kernel not found",
                     "no kernel '%s' on this agent", id ? id : "");
        return false;
    }
    tlog_ctx_session(v->session_id);
    return true;
}

static void h_get(http_req *req, http_resp *resp, void *ctx)
{
    agent *a = _agent(req, resp, ctx);
    if (!a) return;
    kernel_view v;
    if (!_kernel(a, req, resp, &v)) return;
    json_t *j = _view_json(&v);
    kernel_status st;
    ts_err err = {{0}};
    if (runtime_status(a->rt, v.kernel_id, &st, &err)) {
        static const char *const names[] = {"creating", "running", "exited", "gone"};
        json_t *r = json_pack("{s:s, s:s, s:b}", "state", names[st.state], "ip", st.ip,
                              "oom_killed", st.oom_killed);
        if (st.state == KERNEL_EXITED) {
            json_object_set_new(r, "exit_code", json_integer(st.exit_code));
            json_object_set_new(r, "reason", json_string(st.reason));
        }
        json_object_set_new(j, "runtime", r);
    }
    http_reply_json(resp, 200, j);
}

const http_api_agent *http_api_agent_of(http_req *req, http_resp *resp, const void *src)
{
    return _agent(req, resp, src);
}

void http_api_query_argv(const char *runtime_path, const char *code, const char *argv[4])
{
    argv[0] = runtime_path && *runtime_path ? runtime_path : "/bin/sh";
    argv[1] = "-c";
    argv[2] = code;
    argv[3] = NULL;
}

/* Run argv in the kernel; append its output to console; false with a problem sent. */
static bool _run(agent *a, const char *id, const char *const *argv, int timeout_ms, json_t *console,
                 int *exit_code, bool *timed_out, http_resp *resp)
{
    exec_result r;
    ts_err err = {{0}};
    if (!runtime_exec(a->rt, id, argv, NULL, timeout_ms, (size_t)a->exec_output_cap, &r, &err)) {
        TLOG_WARN("execute failed", "error=\"%s\"", err.msg);
        http_problem(resp, 500, "exec-failed", "Execution failed", "%s", err.msg);
        return false;
    }
    if (r.out_len > 0)
        json_array_append_new(console, json_pack("[s, o]", "stdout", _text(r.out, r.out_len)));
    if (r.err_len > 0)
        json_array_append_new(console, json_pack("[s, o]", "stderr", _text(r.err, r.err_len)));
    if (r.out_truncated || r.err_truncated)
        json_array_append_new(console,
                              json_pack("[s, s]", "stderr", "[output truncated by the agent]\n"));
    *exit_code = r.exit_code;
    *timed_out = r.timed_out;
    exec_result_free(&r);
    return true;
}

static void h_execute(http_req *req, http_resp *resp, void *ctx)
{
    agent *a = _agent(req, resp, ctx);
    if (!a) return;
    /* The body first: bad input is refused whatever the kernel. */
    json_t *body = http_json_body(req, resp);
    if (!body) return;
    exec_req er;
    int bad_status;
    ts_err bad = {{0}};
    if (!exec_req_parse(body, &er, &bad_status, &bad)) {
        char q[300];
        TLOG_INFO("execute refused", "status=%d error=%s", bad_status,
                  tlog_quote(q, sizeof(q), bad.msg));
        http_problem(resp, bad_status,
                     bad_status == 413 ? "request-too-large" : "invalid-api-params",
                     "Invalid parameters", "%s", bad.msg);
        json_decref(body);
        return;
    }
    kernel_view v;
    if (!_kernel(a, req, resp, &v)) {
        json_decref(body);
        return;
    }
    const char *mode = er.mode, *code = er.code, *run_id = er.run_id;
    int64_t max = a->exec_timeout_ms;
    int64_t timeout = max;
    if (er.timeout_ms > 0 && er.timeout_ms < max) timeout = er.timeout_ms;
    char mode_buf[16];
    ts_strlcpy(mode_buf, mode, sizeof(mode_buf));
    mode = mode_buf; /* body is released before the answer is built */
    if (strcmp(v.status, "running") != 0) {
        http_problem(resp, 409, "kernel-not-running", "Kernel not running", "kernel %s is %s",
                     v.kernel_id, v.status);
        json_decref(body);
        return;
    }
    char rid[128];
    if (run_id && *run_id)
        ts_strlcpy(rid, run_id, sizeof(rid));
    else
        ts_uuid4(rid);
    run_id = rid; /* body is released before the answer is built */
    json_t *console = json_array();
    int exit_code = 0;
    bool timed_out = false, ok = true;
    if (strcmp(mode, "query") == 0) {
        const char *argv[4];
        http_api_query_argv(v.runtime_path, code, argv);
        ok = _run(a, v.kernel_id, argv, (int)timeout, console, &exit_code, &timed_out, resp);
    } else if (strcmp(mode, "batch") == 0) {
        const char *build = er.build;
        const char *exec = er.exec;
        if (!exec || !*exec) exec = code;
        if (!exec || !*exec) {
            http_problem(resp, 400, "invalid-api-params", "Invalid parameters",
                         "batch mode needs options.exec (a command)");
            ok = false;
        }
        int64_t t0 = ts_now_mono_ms();
        if (ok && build && *build) {
            const char *argv[] = {"/bin/sh", "-c", build, NULL};
            ok = _run(a, v.kernel_id, argv, (int)timeout, console, &exit_code, &timed_out, resp);
        }
        if (ok && !timed_out && exit_code == 0) {
            int64_t left = timeout - (ts_now_mono_ms() - t0);
            const char *argv[] = {"/bin/sh", "-c", exec, NULL};
            ok = _run(a, v.kernel_id, argv, (int)(left > 1 ? left : 1), console, &exit_code,
                      &timed_out, resp);
        }
    } else {
        http_problem(resp, 400, "invalid-api-params", "Invalid parameters",
                     "mode '%s' is not supported (query, batch)", mode);
        ok = false;
    }
    json_decref(body);
    if (!ok) {
        json_decref(console);
        return;
    }
    TLOG_INFO("execute", "mode=%s exit_code=%d timed_out=%d", mode, exit_code, timed_out);
    http_reply_json(resp, 200,
                    json_pack("{s:{s:s, s:s, s:i, s:{}, s:o, s:[]}}", "result", "runId", run_id,
                              "status", timed_out ? "exec-timeout" : "finished", "exitCode",
                              exit_code, "options", "console", console, "files"));
}

static void h_logs(http_req *req, http_resp *resp, void *ctx)
{
    agent *a = _agent(req, resp, ctx);
    if (!a) return;
    kernel_view v;
    if (!_kernel(a, req, resp, &v)) return;
    if (strcmp(v.status, "terminated") == 0) {
        http_problem(resp, 404, "kernel-not-found", "Kernel terminated",
                     "kernel %s is terminated; its logs are gone", v.kernel_id);
        return;
    }
    size_t max = LOGS_DEFAULT_MAX;
    const char *m = http_query_arg(req, "max_bytes");
    if (m && atoll(m) > 0) max = (size_t)atoll(m);
    size_t len = 0;
    ts_err err = {{0}};
    char *logs = runtime_logs(a->rt, v.kernel_id, max, &len, &err);
    if (!logs) {
        /* not created yet: nothing written */
        http_reply_json(resp, 200, json_pack("{s:{s:s}}", "result", "logs", ""));
        return;
    }
    http_reply_json(resp, 200, json_pack("{s:{s:o}}", "result", "logs", _text(logs, len)));
    free(logs);
}

/* The agent and the kernel of the path's {id} when that kernel is running;
 * NULL after a problem (404, or 409 kernel-not-running). */
static agent *_running_kernel(http_req *req, http_resp *resp, void *ctx, kernel_view *v)
{
    agent *a = _agent(req, resp, ctx);
    if (!a || !_kernel(a, req, resp, v)) return NULL;
    if (strcmp(v->status, "running") != 0) {
        http_problem(resp, 409, "kernel-not-running", "Kernel not running", "kernel %s is %s",
                     v->kernel_id, v->status);
        return NULL;
    }
    return a;
}

/* POST /v1/kernels/{id}/apps/{app}/start: start the app unless it is
 * listening (app_start.h). */
static void h_app_start(http_req *req, http_resp *resp, void *ctx)
{
    kernel_view v;
    agent *a = _running_kernel(req, resp, ctx, &v);
    if (!a) return;
    const char *app = http_param(req, "app");
    const kernel_service_port *p = NULL;
    ts_err err = {{0}};
    app_start_result r = app_start(a->rt, &v, app, APP_START_WAIT_MS, &p, &err);
    switch (r) {
    case APP_NOT_FOUND:
        http_problem(resp, 404, "app-not-found", "App not found",
                     "kernel %s has no service port named '%s'", v.kernel_id, app);
        return;
    case APP_NO_COMMAND:
        http_problem(resp, 409, "app-not-running", "App not running",
                     "the app '%s' is not listening on port %d, and its image gives no "
                     "command to start it (label tessera.app.%s.start)",
                     app, p->container_port, app);
        return;
    case APP_TIMEOUT:
        http_problem(resp, 504, "app-start-timeout", "App did not start",
                     "the app '%s' was started but did not listen on port %d within %d s", app,
                     p->container_port, APP_START_WAIT_MS / 1000);
        return;
    case APP_FAILED:
        http_problem(resp, 500, "app-start-failed", "App start failed", "app '%s': %s", app,
                     err.msg);
        return;
    case APP_RUNNING:
    case APP_STARTED:
        break;
    }
    http_reply_json(resp, 200,
                    json_pack("{s:s, s:s, s:s, s:i, s:i, s:b}", "kernel_id", v.kernel_id, "app",
                              p->name, "protocol", p->protocol, "container_port", p->container_port,
                              "host_port", p->host_port, "started", r == APP_STARTED));
}

/* POST /v1/kernels/{id}/apps/{app}/stop: end what listens on the app's port
 * (app_start.h); 200 {"kernel_id", "app", "stopped"} (stopped: false when
 * nothing listened). */
static void h_app_stop(http_req *req, http_resp *resp, void *ctx)
{
    kernel_view v;
    agent *a = _running_kernel(req, resp, ctx, &v);
    if (!a) return;
    const char *app = http_param(req, "app");
    const kernel_service_port *p = NULL;
    ts_err err = {{0}};
    app_stop_result r = app_stop(a->rt, &v, app, APP_STOP_GRACE_MS, &p, &err);
    if (r == APP_STOP_NOT_FOUND) {
        http_problem(resp, 404, "app-not-found", "App not found",
                     "kernel %s has no service port named '%s'", v.kernel_id, app);
        return;
    }
    if (r == APP_STOP_FAILED) {
        http_problem(resp, 409, "kernel-not-running", "Kernel not running", "app '%s': %s", app,
                     err.msg);
        return;
    }
    TLOG_INFO("app stop", "kernel=%s app=%s stopped=%d", v.kernel_id, app, r == APP_STOPPED);
    http_reply_json(resp, 200,
                    json_pack("{s:s, s:s, s:b}", "kernel_id", v.kernel_id, "app", p->name,
                              "stopped", r == APP_STOPPED));
}

void http_api_routes(svc *s, const http_api_source *src)
{
    void *c = (void *)src;
    http_router *r = svc_router(s);
    http_route(r, "GET", "/v1/agent", h_agent, c);
    http_route(r, "GET", "/v1/kernels", h_list, c);
    http_route(r, "GET", "/v1/kernels/{id}", h_get, c);
    http_route(r, "POST", "/v1/kernels/{id}/execute", h_execute, c);
    http_route(r, "GET", "/v1/kernels/{id}/logs", h_logs, c);
    http_route(r, "POST", "/v1/kernels/{id}/apps/{app}/start", h_app_start, c);
    http_route(r, "POST", "/v1/kernels/{id}/apps/{app}/stop", h_app_stop, c);
}
