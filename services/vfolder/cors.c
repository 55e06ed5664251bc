/* cors.c: CORS headers of the transfer endpoints (cors.h). */
#include "cors.h"

#include "libcommon/origins.h"

#include <string.h>
#include <strings.h>

char *vf_cors_origins;

/* Whether the list allows every origin: empty, blank, or with a "*" entry. */
static bool _any_origin(const char *list)
{
    return origins_blank(list) || origins_listed(list, NULL, true);
}

const char *vf_cors_allow_origin(const char *list, const char *origin)
{
    if (_any_origin(list)) return "*";
    if (!origin || !*origin) return NULL;
    return origins_listed(list, origin, false) ? origin : NULL;
}

bool vf_cors_varies(const char *list)
{
    return !_any_origin(list);
}

/* The Allow-Origin value for req, NULL when none is due. */
static const char *_allowed(http_req *req, http_resp *resp)
{
    if (vf_cors_varies(vf_cors_origins)) http_set_header(resp, "Vary", "Origin");
    return vf_cors_allow_origin(vf_cors_origins, http_header(req, "Origin"));
}

void vf_cors_actual(http_req *req, http_resp *resp)
{
    const char *allow = _allowed(req, resp);
    if (!allow) return;
    http_set_header(resp, "Access-Control-Allow-Origin", allow);
    http_set_header(resp, "Access-Control-Expose-Headers", VF_CORS_EXPOSE_HEADERS);
}

void vf_cors_preflight(http_req *req, http_resp *resp)
{
    const char *allow = _allowed(req, resp);
    if (!allow) return;
    http_set_header(resp, "Access-Control-Allow-Origin", allow);
    http_set_header(resp, "Access-Control-Expose-Headers", VF_CORS_EXPOSE_HEADERS);
    http_set_header(resp, "Access-Control-Allow-Methods", VF_CORS_ALLOW_METHODS);
    http_set_header(resp, "Access-Control-Allow-Headers", VF_CORS_ALLOW_HEADERS);
    http_set_header(resp, "Access-Control-Max-Age", VF_CORS_MAX_AGE);
}

void vf_cors_h_options(http_req *req, http_resp *resp, void *ctx)
{
    (void)ctx;
    vf_cors_preflight(req, resp);
    http_set_header(resp, "Allow", "GET, HEAD, OPTIONS");
    http_reply(resp, 204, NULL, "", 0);
}
