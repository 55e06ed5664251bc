/* http_api.c: routes of the public API. Sessions, folders, auth and admin
 * arrive with their issues; the foundation serves the version endpoint. */
#include "http_api.h"

static void h_version(http_req *req, http_resp *resp, void *ctx)
{
    (void)req;
    (void)ctx;
    http_reply_json(resp, 200, json_pack("{s:s, s:s}", "version", GATEWAY_API_VERSION, "manager",
                                         TESSERA_VERSION));
}

void gateway_routes(svc *s)
{
    http_route(svc_router(s), "GET", "/", h_version, s);
}
