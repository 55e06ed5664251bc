/* resources.c: see resources.h. */
#include "resources.h"

#include "proxy.h"
#include "verify.h"

#include <stdlib.h>
#include <string.h>

/* A signed request forwarded to "/v1" + its path and query, with its body. */
static void h_forward(http_req *req, http_resp *resp, void *ctx)
{
    gateway *gw = ctx;
    gw_identity id;
    if (!verify_request(gw, req, resp, &id)) return;
    char *target = proxy_v1_target(req);
    proxy_forward(&gw->up[UPSTREAM_REGISTRY], RESOURCES_TIMEOUT_MS, req, resp, target, &id,
                  req->body, req->body_len);
    free(target);
}

/* POST /resource/recalculate-usage -> registry POST /v1/admin/occupancy/recalculate. */
static void h_recalculate(http_req *req, http_resp *resp, void *ctx)
{
    gateway *gw = ctx;
    gw_identity id;
    if (!verify_request(gw, req, resp, &id)) return;
    proxy_forward(&gw->up[UPSTREAM_REGISTRY], RESOURCES_RECALC_TIMEOUT_MS, req, resp,
                  "/v1/admin/occupancy/recalculate", &id, NULL, 0);
}

/* GET /usage -> registry GET /v1/usage?<query>, with format=csv added when
 * the client asks for text/csv in Accept (the upstream call itself accepts
 * JSON). */
static void h_usage(http_req *req, http_resp *resp, void *ctx)
{
    gateway *gw = ctx;
    gw_identity id;
    if (!verify_request(gw, req, resp, &id)) return;
    char *target = proxy_v1_target(req);
    const char *accept = http_header(req, "Accept");
    if (accept && strstr(accept, "text/csv") && !strstr(target, "format=")) {
        char *t = ts_asprintf("%s%sformat=csv", target, strchr(target, '?') ? "&" : "?");
        free(target);
        target = t;
    }
    proxy_forward(&gw->up[UPSTREAM_REGISTRY], RESOURCES_TIMEOUT_MS, req, resp, target, &id, NULL,
                  0);
    free(target);
}

void resources_routes(gateway *gw)
{
    http_router *r = svc_router(gw->svc);
    http_route(r, "GET", "/scaling-groups", h_forward, gw);
    http_route(r, "GET", "/scaling-groups/{name}/wsproxy-version", h_forward, gw);
    http_route(r, "GET", "/resource/presets", h_forward, gw);
    http_route(r, "POST", "/resource/check-presets", h_forward, gw);
    http_route(r, "POST", "/resource/recalculate-usage", h_recalculate, gw);
    http_route(r, "GET", "/resource/stats/user/month", h_forward, gw);
    http_route(r, "GET", "/resource/stats/admin/month", h_forward, gw);
    /* usage accounting (registry usage_api.h, usage_bai.h) */
    http_route(r, "GET", "/resource/usage/month", h_forward, gw);
    http_route(r, "GET", "/resource/usage/period", h_forward, gw);
    http_route(r, "GET", "/usage", h_usage, gw);
    /* Backend.AI's config store (superadmins; registry config_store.h) */
    http_route(r, "POST", "/config/get", h_forward, gw);
    http_route(r, "POST", "/config/set", h_forward, gw);
    http_route(r, "POST", "/config/delete", h_forward, gw);
    http_route(r, "GET", "/config/docker-registries", h_forward, gw);
}
