/* session_templates.c: see session_templates.h. */
#include "session_templates.h"

#include "libcommon/log.h"
#include "proxy.h"
#include "sessions.h"
#include "verify.h"

#include <stdlib.h>
#include <string.h>

#define PUBLIC_PREFIX "/template/session"

/* "/v1/session-templates" + what follows the public prefix (its path, kept
 * percent-encoded, and its query), without a fragment. */
static char *_target(const http_req *req)
{
    const char *o = proxy_origin(req);
    size_t len = strcspn(o, "#");
    size_t plen = strlen(PUBLIC_PREFIX);
    const char *rest = strncmp(o, PUBLIC_PREFIX, plen) == 0 ? o + plen : "";
    size_t rlen = len >= plen ? len - plen : 0;
    return ts_asprintf("/v1/session-templates%.*s", (int)rlen, rest);
}

/* * /template/session[/{id}] */
static void h_templates(http_req *req, http_resp *resp, void *ctx)
{
    gateway *gw = ctx;
    const char *id = http_param(req, "id");
    if (id) tlog_ctx_entity("session_template", id);
    gw_identity ident;
    if (!verify_request(gw, req, resp, &ident)) return;
    char *target = _target(req);
    proxy_forward(&gw->up[UPSTREAM_REGISTRY], SESSIONS_TIMEOUT_MS, req, resp, target, &ident,
                  req->body, req->body_len);
    free(target);
}

/* POST /session/_/create-from-template: a create, with a create's time limit. */
static void h_create_from_template(http_req *req, http_resp *resp, void *ctx)
{
    gateway *gw = ctx;
    gw_identity ident;
    if (!verify_request(gw, req, resp, &ident)) return;
    json_t *body = http_json_body(req, resp); /* 400 when not a JSON object */
    if (!body) return;
    int64_t timeout = sessions_create_timeout_ms(body);
    json_decref(body);
    proxy_forward(&gw->up[UPSTREAM_REGISTRY], timeout, req, resp,
                  "/v1/sessions/_/create-from-template", &ident, req->body, req->body_len);
}

void session_templates_routes(gateway *gw)
{
    http_router *r = svc_router(gw->svc);
    http_route(r, "*", PUBLIC_PREFIX, h_templates, gw);
    http_route(r, "*", PUBLIC_PREFIX "/{id}", h_templates, gw);
    http_route(r, "POST", "/session/_/create-from-template", h_create_from_template, gw);
    http_route(r, "POST", "/kernel/_/create-from-template", h_create_from_template, gw);
}
