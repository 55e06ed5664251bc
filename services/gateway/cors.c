/* cors.c: see cors.h. */
#include "cors.h"

#include "libcommon/origins.h"

#include <string.h>
#include <strings.h>

bool cors_guard(const char *list, http_req *req, http_resp *resp)
{
    if (origins_blank(list)) return true;
    http_set_header(resp, "Vary", "Origin");
    const char *origin = http_header(req, "Origin");
    if (!origin) return true;
    bool listed = origins_listed(list, origin, false);
    bool any = !listed && origins_listed(list, origin, true);
    if (!listed && !any) return true;
    http_set_header(resp, "Access-Control-Allow-Origin", listed ? origin : "*");
    if (listed) http_set_header(resp, "Access-Control-Allow-Credentials", "true");
    http_set_header(resp, "Access-Control-Expose-Headers", CORS_EXPOSE_HEADERS);
    if (strcmp(req->method, "OPTIONS") != 0 || !http_header(req, "Access-Control-Request-Method"))
        return true;
    http_set_header(resp, "Access-Control-Allow-Methods", CORS_ALLOW_METHODS);
    http_set_header(resp, "Access-Control-Allow-Headers", CORS_ALLOW_HEADERS);
    http_set_header(resp, "Access-Control-Max-Age", CORS_MAX_AGE);
    http_reply(resp, 204, NULL, NULL, 0);
    return false;
}
