/* folders.c: /folders/... forwarded to tessera-vfolder (see folders.h). */
#include "folders.h"

#include "libcommon/metrics.h"
#include "proxy.h"
#include "verify.h"

#include <stdlib.h>
#include <string.h>

static proxy_upstream g_vfolder = {.name = "tessera-vfolder"};
static char **g_vfolder_url;

uint64_t folders_vfolder_failures(void)
{
    return atomic_load(&g_vfolder.failures);
}

/* The origin-form part of the raw target, also of an absolute-form one. */
static const char *_origin(const http_req *req)
{
    const char *t = req->target ? req->target : req->path;
    if (t[0] == '/') return t;
    const char *scheme = strstr(t, "://");
    const char *slash = scheme ? strchr(scheme + 3, '/') : NULL;
    return slash ? slash : "/";
}

static void h_folders(http_req *req, http_resp *resp, void *ctx)
{
    gw_identity id;
    if (!verify_request(ctx, req, resp, &id)) return;
    const char *o = _origin(req);
    char *target = ts_asprintf("/v1%.*s", (int)strcspn(o, "#"), o);
    size_t plen = strcspn(req->path, "?");
    bool clone = strcmp(req->method, "POST") == 0 && plen > 6 &&
                 strncmp(req->path + plen - 6, "/clone", 6) == 0;
    proxy_forward(&g_vfolder, *g_vfolder_url, clone ? FOLDERS_CLONE_TIMEOUT_MS : FOLDERS_TIMEOUT_MS,
                  req, resp, target, &id, req->body, req->body_len);
    free(target);
}

static char **_option_string(gateway *gw, const char *name)
{
    const svc_spec *spec = svc_spec_of(gw->svc);
    for (const cfg_option *o = spec ? spec->options : NULL; o && o->name; o++)
        if (strcmp(o->name, name) == 0 && o->type == CFG_STRING) return o->dst;
    ts_panic("gateway option %s is missing from the option table", name);
}

static void _collect(FILE *out, void *ctx)
{
    (void)ctx;
    metrics_sample_u64(out, "tessera_gateway_upstream_failures_total", "upstream=\"vfolder\"",
                       folders_vfolder_failures());
}

void folders_routes(gateway *gw)
{
    g_vfolder_url = _option_string(gw, "vfolder.url");
    metrics_add(svc_metrics(gw->svc), _collect, gw);
    http_router *r = svc_router(gw->svc);
    static const char *const pats[] = {"/folders", "/folders/{a}", "/folders/{a}/{b}",
                                       "/folders/{a}/{b}/{c}", "/folders/{a}/{b}/{c}/{d}"};
    for (size_t i = 0; i < TS_ARRAY_LEN(pats); i++)
        http_route(r, "*", pats[i], h_folders, gw);
}
