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

void folders_routes(gateway *gw)
{
    http_router *r = svc_router(gw->svc);
    static const char *const pats[] = {"/folders", "/folders/{a}", "/folders/{a}/{b}",
                                       "/folders/{a}/{b}/{c}", "/folders/{a}/{b}/{c}/{d}"};
    for (size_t i = 0; i < TS_ARRAY_LEN(pats); i++)
        http_route(r, "*", pats[i], h_folders, gw);
}
