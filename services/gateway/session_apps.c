/* session_apps.c: a session's apps, found and started (session_apps.h). */
#include "session_apps.h"

#include "libcommon/httpc.h"
#include "libcommon/service_ports.h"
#include "proxy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static upstream *_registry(gateway *gw)
{
    return &gw->up[UPSTREAM_REGISTRY];
}

bool session_apps_running(gateway *gw, http_req *req, http_resp *resp, const gw_identity *id,
                          const char *name, const char *what, json_t **info)
{
    char *ename = httpc_escape(name ? name : "");
    char *target = ts_asprintf("/v1/sessions/%s", ename);
    free(ename);
    *info = NULL;
    bool got = proxy_call_json(_registry(gw), SESSION_APPS_TIMEOUT_MS, "GET", req, resp, target, id,
                               NULL, 200, info);
    free(target);
    if (!got) return false;
    const char *status = json_string_value(json_object_get(*info, "status"));
    const char *sname = json_string_value(json_object_get(*info, "sessionName"));
    if (status && strcmp(status, "RUNNING") == 0) return true;
    http_problem(resp, 409, "invalid-session-state", NULL,
                 "session %s is %s; %s only while it is RUNNING", sname ? sname : "?",
                 status ? status : "in an unknown state", what);
    json_decref(*info);
    *info = NULL;
    return false;
}

/* The app's port in the session's servicePorts: by name (app), else the one
 * whose container port is port (> 0). NULL when none. */
static const json_t *_find_port(const json_t *ports, const char *app, json_int_t port)
{
    size_t i;
    const json_t *p;
    json_array_foreach(ports, i, p)
    {
        const char *n = json_string_value(json_object_get(p, "name"));
        if (app && n && strcmp(n, app) == 0) return p;
    }
    if (port <= 0) return NULL;
    json_array_foreach(ports, i, p)
    {
        size_t j;
        const json_t *cp;
        json_array_foreach(json_object_get(p, "container_ports"), j, cp)
        {
            if (json_integer_value(cp) == port) return p;
        }
    }
    return NULL;
}

/* The kernel of info named kernel (its name, main1, sub1, ..., or its id),
 * or NULL. */
static const json_t *_kernel(const json_t *info, const char *kernel)
{
    size_t i;
    const json_t *k;
    json_array_foreach(json_object_get(info, "kernels"), i, k)
    {
        const char *n = json_string_value(json_object_get(k, "name"));
        const char *kid = json_string_value(json_object_get(k, "id"));
        if ((n && strcmp(n, kernel) == 0) || (kid && strcasecmp(kid, kernel) == 0)) return k;
    }
    return NULL;
}

/* The agent starts the app of session sid (of its kernel named kernel, NULL:
 * the main one) unless it is listening (registry POST
 * /v1/sessions/{id}/apps/{app}/start); false with the problem in resp. */
static bool _start_app(gateway *gw, http_req *req, http_resp *resp, const gw_identity *id,
                       const char *sid, const char *app, const char *kernel)
{
    char *esid = httpc_escape(sid), *eapp = httpc_escape(app);
    char *ek = kernel ? httpc_escape(kernel) : NULL;
    char *target = ts_asprintf("/v1/sessions/%s/apps/%s/start%s%s", esid, eapp,
                               ek ? "?kernel=" : "", ek ? ek : "");
    free(ek);
    free(esid);
    free(eapp);
    json_t *r = NULL;
    bool ok = proxy_call_json(_registry(gw), SESSION_APPS_START_TIMEOUT_MS, "POST", req, resp,
                              target, id, NULL, 200, &r);
    free(target);
    json_decref(r);
    return ok;
}

static bool _start_found(gateway *gw, http_req *req, http_resp *resp, const gw_identity *id,
                         const char *sid, const char *sname, const char *kernel, const json_t *p,
                         const char *app, json_int_t port, session_app *out);

bool session_apps_start(gateway *gw, http_req *req, http_resp *resp, const gw_identity *id,
                        const json_t *info, const char *kernel, const char *app, json_int_t port,
                        session_app *out)
{
    const char *sid = json_string_value(json_object_get(info, "sessionUuid"));
    const char *sname = json_string_value(json_object_get(info, "sessionName"));
    if (kernel && !*kernel) kernel = NULL;
    const json_t *k = kernel ? _kernel(info, kernel) : NULL;
    if (kernel && !k) {
        http_problem(resp, 404, "kernel-not-found", NULL,
                     "session %s has no kernel %s (main1, sub1, ... or a kernel id)",
                     sname ? sname : "?", kernel);
        return false;
    }
    json_t *kports = k ? service_ports_view(json_object_get(k, "servicePorts"),
                                            json_string_value(json_object_get(k, "host")))
                       : NULL;
    const json_t *p = _find_port(k ? kports : json_object_get(info, "servicePorts"), app, port);
    bool ok = _start_found(gw, req, resp, id, sid, sname, kernel, p, app, port, out);
    json_decref(kports);
    return ok;
}

/* session_apps_start once the port p is found (NULL: none). */
static bool _start_found(gateway *gw, http_req *req, http_resp *resp, const gw_identity *id,
                         const char *sid, const char *sname, const char *kernel, const json_t *p,
                         const char *app, json_int_t port, session_app *out)
{
    const char *pname = json_string_value(json_object_get(p, "name"));
    const char *host = json_string_value(json_object_get(p, "host"));
    json_int_t host_port = json_integer_value(json_array_get(json_object_get(p, "host_ports"), 0));
    if (!sname) sname = "?";
    if (!p) {
        if (app && *app)
            http_problem(resp, 404, "not-found", "Service Not Found",
                         "session %s has no service port named '%s'", sname, app);
        else
            http_problem(resp, 404, "not-found", "Service Not Found",
                         "session %s has no service port on port %lld", sname, (long long)port);
        return false;
    }
    if (!sid || !pname || !host || !*host || host_port <= 0 || host_port > 65535 ||
        strlen(sid) >= sizeof(out->sid) || strlen(pname) >= sizeof(out->name) ||
        strlen(host) >= sizeof(out->host)) {
        http_problem(resp, 409, "invalid-session-state", NULL,
                     "the service port '%s' of session %s is not published yet",
                     pname ? pname : "?", sname);
        return false;
    }
    if (!_start_app(gw, req, resp, id, sid, pname, kernel)) return false;
    memset(out, 0, sizeof(*out));
    snprintf(out->sid, sizeof(out->sid), "%s", sid);
    snprintf(out->name, sizeof(out->name), "%s", pname);
    snprintf(out->host, sizeof(out->host), "%s", host);
    const char *proto = json_string_value(json_object_get(p, "protocol"));
    if (!proto || (strcmp(proto, "tcp") != 0 && strcmp(proto, "preopen") != 0)) proto = "http";
    snprintf(out->protocol, sizeof(out->protocol), "%s", proto);
    out->host_port = (int)host_port;
    return true;
}

json_t *session_apps_list(const json_t *info)
{
    json_t *list = json_array();
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(info, "servicePorts"), i, p)
    {
        const json_t *name = json_object_get(p, "name");
        if (!json_is_string(name)) continue;
        const json_t *proto = json_object_get(p, "protocol");
        const json_t *ports = json_object_get(p, "container_ports");
        json_t *item = json_object();
        json_object_set(item, "name", (json_t *)name);
        json_object_set_new(item, "protocol",
                            json_string(json_is_string(proto) ? json_string_value(proto) : "http"));
        json_object_set_new(item, "ports",
                            json_is_array(ports) ? json_deep_copy(ports) : json_array());
        static const char *const optional[] = {"url_template", "allowed_arguments", "allowed_envs"};
        for (size_t k = 0; k < TS_ARRAY_LEN(optional); k++) {
            const json_t *v = json_object_get(p, optional[k]);
            if (v && !json_is_null(v)) json_object_set(item, optional[k], (json_t *)v);
        }
        json_array_append_new(list, item);
    }
    return list;
}
