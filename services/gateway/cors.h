/* cors.h: CORS for browser clients of the API (Backend.AI's JavaScript SDK
 * or Web-UI served from another origin), gateway.cors_origins:
 *
 *   empty (the default): no Access-Control-* header; a page of another
 *     origin cannot read any answer (the console, served by the gateway
 *     itself, needs none);
 *   a list of origins: a request whose Origin is listed gets
 *     Access-Control-Allow-Origin: <that origin>,
 *     Access-Control-Allow-Credentials: true (so that the SDK's session mode
 *     works from there too, given gateway.web_allowed_origins) and the
 *     exposed headers; every answer carries Vary: Origin;
 *   "*": any origin, answered Access-Control-Allow-Origin: * and never with
 *     credentials (a signed request needs none: its Authorization header is
 *     allowed).
 *
 * A preflight (OPTIONS with Origin and Access-Control-Request-Method) from
 * an allowed origin is answered 204 at once, before any signature or login
 * is checked; from another origin it is routed as any request (a 4xx, and no
 * CORS header: the browser refuses). */
#ifndef GATEWAY_CORS_H
#define GATEWAY_CORS_H

#include "libcommon/http.h"

#define CORS_ALLOW_METHODS "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
#define CORS_ALLOW_HEADERS                                                                         \
    "Authorization, Content-Type, Date, X-BackendAI-Version, X-BackendAI-Date, "                   \
    "X-BackendAI-Encoded, X-BackendAI-SessionID, X-BackendAI-Domain, X-CSRF-Token, X-Request-ID"
#define CORS_EXPOSE_HEADERS "X-Request-ID, Retry-After, Content-Disposition, Location"
#define CORS_MAX_AGE "600"

/* The guard of every request (svc_spec.public_guard's body): the CORS
 * headers of an allowed origin's request, and the answer to its preflight
 * (false: answered). list: gateway.cors_origins. */
bool cors_guard(const char *list, http_req *req, http_resp *resp) TS_MUST_CHECK;

#endif
