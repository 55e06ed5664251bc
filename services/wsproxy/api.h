/* api.h: wsproxy's internal HTTP API (docs/internal-api.md, "tessera-wsproxy"),
 * served by the libcommon HTTP server on http.listen:
 *   POST   /v1/routes                  register a route, answer {token, url, ...}
 *   DELETE /v1/sessions/{id}/routes    remove a session's routes, close its connections
 *   GET    /v1/info                    where the proxy listens, its public URL */
#ifndef WSPROXY_API_H
#define WSPROXY_API_H

#include "libcommon/svc.h"
#include "services/wsproxy/routes.h"

typedef struct api_ctx {
    svc *s;
    int64_t token_ttl_ms;
    int64_t cookie_ttl_ms;
    const char *public_url; /* resolved, e.g. http://127.0.0.1:8097 or one with a star host */
    const char *proxy_addr;
} api_ctx;

void api_routes(http_router *r, api_ctx *ctx);

/* The URL that opens an app: public_url with its "*" replaced by the app hash,
 * then "/?token=T" (http, preopen) or "/v1/tcp?token=T" (tcp). Heap string. */
char *api_app_url(const char *public_url, const char *hash, route_proto proto, const char *token);

#endif
