/* api.c: the internal API that the gateway / registry call (api.h). */
#include "services/wsproxy/api.h"

#include "libcommon/log.h"

#include <stdlib.h>
#include <string.h>

char *api_app_url(const char *public_url, const char *hash, route_proto proto, const char *token)
{
    const char *star = strchr(public_url, '*');
    size_t n = strlen(public_url);
    while (n > 0 && public_url[n - 1] == '/')
        n--;
    const char *path = proto == ROUTE_TCP ? "/v1/tcp" : "/";
    if (star)
        return ts_asprintf("%.*s%s%.*s%s?token=%s", (int)(star - public_url), public_url, hash,
                           (int)(n - (size_t)(star + 1 - public_url)), star + 1, path, token);
    return ts_asprintf("%.*s%s?token=%s", (int)n, public_url, path, token);
}

static const char *str_field(json_t *o, const char *name)
{
    return json_string_value(json_object_get(o, name));
}

static void h_create(http_req *req, http_resp *resp, void *vctx)
{
    api_ctx *ctx = vctx;
    if (!ctx->public_url) {
        http_problem(resp, 503, "service-unavailable", "Starting",
                     "the proxy is not listening yet");
        return;
    }
    json_t *body = http_json_body(req, resp);
    if (!body) return;
    route r;
    memset(&r, 0, sizeof(r));
    const char *user = str_field(body, "user_id"), *sid = str_field(body, "session_id");
    const char *app = str_field(body, "app"), *target = str_field(body, "target");
    const char *proto = str_field(body, "protocol");
    ts_err err;
    const char *bad = NULL;
    if (!route_id_ok(user))
        bad = "user_id: 1 to 64 of [A-Za-z0-9._:-]";
    else if (!route_id_ok(sid))
        bad = "session_id: 1 to 64 of [A-Za-z0-9._:-]";
    else if (!route_app_ok(app))
        bad = "app: 1 to 64 of [A-Za-z0-9._-]";
    else if (!route_proto_parse(proto ? proto : "http", &r.proto))
        bad = "protocol: http, tcp or preopen";
    else if (!route_target_parse(target, r.host, &r.port, &err))
        bad = err.msg;
    int64_t ttl_ms = ctx->token_ttl_ms;
    json_t *ttl = json_object_get(body, "ttl");
    if (!bad && ttl) {
        if (!json_is_integer(ttl) || json_integer_value(ttl) < 1 ||
            json_integer_value(ttl) * 1000 > ctx->token_ttl_ms)
            bad = "ttl: seconds, 1 to wsproxy.token_ttl";
        else
            ttl_ms = json_integer_value(ttl) * 1000;
    }
    if (bad) {
        http_problem(resp, 400, "invalid-api-params", "Invalid route", "%s", bad);
        json_decref(body);
        return;
    }
    strcpy(r.user_id, user);
    strcpy(r.session_id, sid);
    strcpy(r.app, app);
    json_decref(body);
    tlog_ctx_session(r.session_id);
    rds *rd = svc_redis(ctx->s, &err);
    char token[TOK_LEN + 1];
    if (!rd || !routes_create(rd, &r, ttl_ms, ctx->cookie_ttl_ms, token, &err)) {
        TLOG_ERROR("route not stored", "error=\"%s\"", err.msg);
        http_problem(resp, 503, "service-unavailable", "Routes unavailable", "Redis: %s", err.msg);
        return;
    }
    char *url = api_app_url(ctx->public_url, r.hash, r.proto, token);
    char cookie[TOK_COOKIE_NAME_LEN + 1];
    snprintf(cookie, sizeof(cookie), "%s%s", TOK_COOKIE_PREFIX, r.hash);
    tlog_ctx_entity("route", r.hash);
    TLOG_INFO("route created", "user=%s app=%s protocol=%s target=%s:%d", r.user_id, r.app,
              route_proto_name(r.proto), r.host, r.port);
    json_t *out = json_pack("{s:s, s:s, s:I, s:s, s:s, s:s, s:s, s:s}", "token", token, "url", url,
                            "expires_at", (json_int_t)r.expires_at_ms, "app_hash", r.hash,
                            "cookie_name", cookie, "protocol", route_proto_name(r.proto),
                            "session_id", r.session_id, "app", r.app);
    free(url);
    http_reply_json(resp, 201, out);
}

static void h_revoke(http_req *req, http_resp *resp, void *vctx)
{
    api_ctx *ctx = vctx;
    const char *sid = http_param(req, "id");
    if (!route_id_ok(sid)) {
        http_problem(resp, 400, "invalid-api-params", "Invalid session id",
                     "1 to 64 of [A-Za-z0-9._:-]");
        return;
    }
    tlog_ctx_session(sid);
    ts_err err;
    rds *rd = svc_redis(ctx->s, &err);
    long removed = 0;
    if (!rd || !routes_revoke_session(rd, sid, &removed, &err)) {
        TLOG_ERROR("routes not removed", "error=\"%s\"", err.msg);
        http_problem(resp, 503, "service-unavailable", "Routes unavailable", "Redis: %s", err.msg);
        return;
    }
    TLOG_INFO("session routes removed", "removed=%ld", removed);
    http_reply_json(resp, 200,
                    json_pack("{s:s, s:i}", "session_id", sid, "removed", (json_int_t)removed));
}

/* POST /v1/routes/restore {"routes": [{"key", "route": {record}}]}: routes the
 * registry kept, stored again after Redis lost them. */
static void h_restore(http_req *req, http_resp *resp, void *vctx)
{
    api_ctx *ctx = vctx;
    json_t *body = http_json_body(req, resp);
    if (!body) return;
    json_t *routes = json_object_get(body, "routes");
    if (!json_is_array(routes)) {
        http_problem(resp, 400, "invalid-api-params", "Invalid restore", "routes: a list");
        json_decref(body);
        return;
    }
    ts_err err = {{0}};
    rds *rd = svc_redis(ctx->s, &err);
    int64_t now = ts_now_wall_ms();
    long restored = 0, skipped = 0;
    bool failed = rd == NULL;
    size_t i;
    json_t *it;
    json_array_foreach(routes, i, it)
    {
        if (failed) break;
        const char *key = str_field(it, "key");
        char *text = json_dumps(json_object_get(it, "route"), JSON_COMPACT);
        route r;
        ts_err perr;
        bool stored = false;
        if (!key || !ts_token_syntax_ok(key, strlen(key)) || !text ||
            !route_from_json(text, strlen(text), &r, &perr) || !route_id_ok(r.session_id)) {
            skipped++;
        } else if (!routes_restore(rd, &r, key, now, &stored, &err)) {
            failed = true;
        } else {
            restored += stored;
            skipped += !stored;
        }
        free(text);
    }
    json_decref(body);
    char epoch[64] = "";
    if (failed || !routes_epoch_renew(rd, epoch, &err)) {
        TLOG_ERROR("routes not restored", "error=\"%s\"", err.msg);
        http_problem(resp, 503, "service-unavailable", "Routes unavailable", "Redis: %s", err.msg);
        return;
    }
    TLOG_WARN("routes restored", "restored=%ld skipped=%ld epoch=%s", restored, skipped, epoch);
    http_reply_json(resp, 200,
                    json_pack("{s:I, s:I, s:s}", "restored", (json_int_t)restored, "skipped",
                              (json_int_t)skipped, "epoch", epoch));
}

static void h_info(http_req *req, http_resp *resp, void *vctx)
{
    (void)req;
    api_ctx *ctx = vctx;
    http_reply_json(
        resp, 200,
        json_pack("{s:s, s:s, s:s}", "proxy_addr", ctx->proxy_addr ? ctx->proxy_addr : "",
                  "public_url", ctx->public_url ? ctx->public_url : "", "mode",
                  ctx->public_url && strchr(ctx->public_url, '*') ? "subdomain" : "shared"));
}

void api_routes(http_router *r, api_ctx *ctx)
{
    http_route(r, "POST", "/v1/routes", h_create, ctx);
    http_route(r, "POST", "/v1/routes/restore", h_restore, ctx);
    http_route(r, "DELETE", "/v1/sessions/{id}/routes", h_revoke, ctx);
    http_route(r, "GET", "/v1/info", h_info, ctx);
}
