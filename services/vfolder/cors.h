/* cors.h: CORS on tessera-vfolder's client-facing transfer endpoints
 * (/v1/transfer/upload[/{id}], /v1/transfer/download), so that a web console
 * served from another origin can upload (tus-js-client) and download with
 * the token of request-upload / request-download. These requests carry no
 * cookies or credentials (the token is in the query), so any origin is safe
 * by default; vfolder.cors_origins narrows it to a list.
 *
 *   vfolder.cors_origins empty: Access-Control-Allow-Origin: *
 *   a list, the request's Origin listed: that origin, and Vary: Origin
 *   a list, the Origin not listed (or none): no Access-Control-* header
 *     (the browser blocks the response), Vary: Origin still
 *
 * Every response of those routes (success and problem alike) gets
 * Allow-Origin and Expose-Headers (vf_cors_actual); OPTIONS also the preflight
 * headers (vf_cors_preflight), with neither token nor Tus-Resumable needed. */
#ifndef VFOLDER_CORS_H
#define VFOLDER_CORS_H

#include "libcommon/http.h"

#define VF_CORS_ALLOW_METHODS "GET, HEAD, POST, PATCH, DELETE, OPTIONS"
#define VF_CORS_ALLOW_HEADERS                                                                      \
    "Tus-Resumable, Upload-Length, Upload-Offset, Upload-Metadata, Upload-Defer-Length, "          \
    "Upload-Concat, Content-Type, X-HTTP-Method-Override, X-Requested-With, Range, If-Range"
#define VF_CORS_EXPOSE_HEADERS                                                                     \
    "Upload-Offset, Upload-Length, Location, Tus-Resumable, Tus-Version, Tus-Extension, "          \
    "Tus-Max-Size, Content-Disposition, Content-Length, Content-Range, ETag"
#define VF_CORS_MAX_AGE "600"

/* vfolder.cors_origins (files_routes.c's option table): NULL or "" for any. */
extern char *vf_cors_origins;

/* The Access-Control-Allow-Origin value for a request from origin (NULL: the
 * request has none) under the allowed list (comma-separated origins, spaces
 * around them ignored; NULL or empty: any origin): "*" for any, the origin
 * itself when listed (compared without case and without a trailing '/' of
 * the list's entry; an entry "*" allows every origin, answered "*"), NULL
 * when no CORS header is due. Returns origin or a static string. */
const char *vf_cors_allow_origin(const char *list, const char *origin);

/* Whether the answer depends on the request's Origin (a non-empty list
 * without "*"): then it carries Vary: Origin. */
bool vf_cors_varies(const char *list) TS_MUST_CHECK;

/* The headers of an actual response of a transfer route under
 * vf_cors_origins: Access-Control-Allow-Origin and
 * Access-Control-Expose-Headers when allowed, Vary: Origin when it varies.
 * Set before anything else, so that problems carry them too. */
void vf_cors_actual(http_req *req, http_resp *resp);

/* vf_cors_actual, plus for an allowed origin Access-Control-Allow-Methods,
 * -Allow-Headers and -Max-Age: the answer to a preflight OPTIONS. */
void vf_cors_preflight(http_req *req, http_resp *resp);

/* OPTIONS of a transfer route that has no OPTIONS of its own (download):
 * the preflight headers and 204 with Allow. */
void vf_cors_h_options(http_req *req, http_resp *resp, void *ctx);

#endif
