/* resources.c: see resources.h. */
#include "resources.h"

#include "proxy.h"
#include "verify.h"

#include <stdlib.h>

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
    /* Backend.AI's config store (superadmins; registry config_store.h) */
    http_route(r, "POST", "/config/get", h_forward, gw);
    http_route(r, "POST", "/config/set", h_forward, gw);
    http_route(r, "POST", "/config/delete", h_forward, gw);
    http_route(r, "GET", "/config/docker-registries", h_forward, gw);
}
