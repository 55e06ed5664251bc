/* scaling_groups.c: see scaling_groups.h. */
#include "scaling_groups.h"

#include "auth_client.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"

#include <stdlib.h>
#include <string.h>

bool scaling_groups_context(http_req *req, http_resp *resp, const ts_caller *c, const char *group,
                            json_t **ctx)
{
    *ctx = NULL;
    if (!group || !group[0]) {
        *ctx = json_incref(c->ctx);
        return true;
    }
    tlog_ctx_entity("project", group);
    long status = 0;
    json_t *body = NULL;
    ts_err err = {{0}};
    if (!authctx_get(authc(), c->access_key, group, req->request_id, &status, &body, &err)) {
        TLOG_WARN("tessera-auth unreachable", "error=\"%s\"", err.msg);
        http_problem(resp, 503, "service-unavailable", NULL, "tessera-auth is unreachable");
        return false;
    }
    if (status == 200 && json_is_object(body)) {
        *ctx = body;
        return true;
    }
    const char *msg = json_string_value(json_object_get(body, "msg"));
    if (status == 404) {
        http_problem(resp, 404, "not-found", NULL, "%s", msg ? msg : "unknown project");
    } else if (status == 403) {
        http_problem(resp, 403, "forbidden", NULL, "%s", msg ? msg : "not a member of the project");
    } else if (status == 400) {
        http_problem(resp, 400, "invalid-api-params", NULL, "%s", msg ? msg : "bad project");
    } else {
        TLOG_WARN("tessera-auth answered an error", "status=%ld", status);
        http_problem(resp, 503, "service-unavailable", NULL, "tessera-auth answered %ld", status);
    }
    json_decref(body);
    return false;
}

json_t *scaling_groups_allowed(PGconn *conn, http_resp *resp, const json_t *ctx)
{
    json_t *allowed = json_object_get(ctx, "allowed_resource_groups");
    char *aj = json_is_array(allowed) ? json_dumps(allowed, JSON_COMPACT) : ts_strdup("[]");
    const char *p[] = {aj};
    PGresult *r = pgjson_query(conn, resp, "list allowed resource groups",
                               "SELECT name FROM registry.resource_groups WHERE is_active"
                               " AND name IN (SELECT jsonb_array_elements_text($1::jsonb))"
                               " ORDER BY name",
                               1, p);
    free(aj);
    if (!r) return NULL;
    json_t *names = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(names, json_string(PQgetvalue(r, i, 0)));
    PQclear(r);
    return names;
}

/* The project a query names: group, group_id or group_name (Backend.AI's aliases). */
static const char *_query_group(http_req *req)
{
    static const char *const keys[] = {"group", "group_id", "group_name"};
    for (size_t i = 0; i < TS_ARRAY_LEN(keys); i++) {
        const char *v = http_query_arg(req, keys[i]);
        if (v) return v;
    }
    return NULL;
}

/* GET /v1/scaling-groups */
static void h_list(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    ts_caller c;
    if (!caller_get(req, resp, NULL, &c)) return;
    json_t *kctx = NULL, *names = NULL;
    PGconn *conn = NULL;
    if (!scaling_groups_context(req, resp, &c, _query_group(req), &kctx) ||
        !(conn = pgjson_get(s, resp)) || !(names = scaling_groups_allowed(conn, resp, kctx)))
        goto out;
    json_t *list = json_array();
    size_t i;
    json_t *n;
    json_array_foreach(names, i, n) json_array_append_new(list, json_pack("{s:O}", "name", n));
    http_reply_json(resp, 200, json_pack("{s:o}", "scaling_groups", list));
out:
    json_decref(names);
    json_decref(kctx);
    pgjson_put(s, conn);
    caller_free(&c);
}

/* GET /v1/scaling-groups/{name}/wsproxy-version: how Backend.AI's Web-UI
 * opens the group's apps. Tessera's is "v2": POST /session/{name}/
 * start-service answers a URL of tessera-wsproxy with a token, which the
 * page opens directly (v1 would be the Web-UI's own local proxy over
 * /stream/session/{name}/httpproxy, not served). A group the caller may not
 * use is 404, as one that does not exist. */
static void h_wsproxy_version(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    ts_caller c;
    if (!caller_get(req, resp, NULL, &c)) return;
    const char *name = http_param(req, "name");
    tlog_ctx_entity("resource_group", name);
    json_t *kctx = NULL, *names = NULL;
    PGconn *conn = NULL;
    if (!scaling_groups_context(req, resp, &c, _query_group(req), &kctx) ||
        !(conn = pgjson_get(s, resp)) || !(names = scaling_groups_allowed(conn, resp, kctx)))
        goto out;
    bool allowed = false;
    size_t i;
    json_t *n;
    json_array_foreach(names, i, n) if (strcmp(json_string_value(n), name) == 0) allowed = true;
    if (allowed)
        http_reply_json(resp, 200, json_pack("{s:s}", "wsproxy_version", "v2"));
    else
        http_problem(resp, 404, "not-found", NULL, "no resource group %s among those you may use",
                     name);
out:
    json_decref(names);
    json_decref(kctx);
    pgjson_put(s, conn);
    caller_free(&c);
}

void scaling_groups_routes(svc *s)
{
    http_route(svc_router(s), "GET", "/v1/scaling-groups", h_list, s);
    http_route(svc_router(s), "GET", "/v1/scaling-groups/{name}/wsproxy-version", h_wsproxy_version,
               s);
}
