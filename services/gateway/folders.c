/* folders.c: /folders/... forwarded to tessera-vfolder (see folders.h). */
#include "folders.h"

#include "libcommon/log.h"
#include "proxy.h"
#include "verify.h"

#include <stdlib.h>
#include <string.h>

static void h_folders(http_req *req, http_resp *resp, void *ctx)
{
    gateway *gw = ctx;
    const char *folder = http_param(req, "a");
    if (folder) tlog_ctx_entity("folder", folder);
    gw_identity id;
    if (!verify_request(gw, req, resp, &id)) return;
    char *target = proxy_v1_target(req);
    size_t plen = strcspn(req->path, "?");
    bool clone = strcmp(req->method, "POST") == 0 && plen > 6 &&
                 strncmp(req->path + plen - 6, "/clone", 6) == 0;
    proxy_forward(&gw->up[UPSTREAM_VFOLDER], clone ? FOLDERS_CLONE_TIMEOUT_MS : FOLDERS_TIMEOUT_MS,
                  req, resp, target, &id, req->body, req->body_len);
    free(target);
}

/* Backend.AI's download_with_token: the token request-download answered is
 * the authority, as at tessera-vfolder's own download URL, so the request
 * need not be signed (the SDK's get_download_url_with_token makes a plain
 * link of it for a browser). tessera-vfolder checks the token and answers
 * 302 to its download URL; the bytes never pass through here. */
static void h_download_with_token(http_req *req, http_resp *resp, void *ctx)
{
    gateway *gw = ctx;
    char *target = proxy_v1_target(req);
    proxy_forward(&gw->up[UPSTREAM_VFOLDER], FOLDERS_TIMEOUT_MS, req, resp, target, NULL, NULL, 0);
    free(target);
}

void folders_routes(gateway *gw)
{
    http_router *r = svc_router(gw->svc);
    http_route(r, "GET", "/folders/_/download_with_token", h_download_with_token, gw);
    static const char *const pats[] = {"/folders", "/folders/{a}", "/folders/{a}/{b}",
                                       "/folders/{a}/{b}/{c}", "/folders/{a}/{b}/{c}/{d}"};
    for (size_t i = 0; i < TS_ARRAY_LEN(pats); i++)
        http_route(r, "*", pats[i], h_folders, gw);
}
