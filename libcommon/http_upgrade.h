/* http_upgrade.h: the server's side of upgraded connections (http.h,
 * "upgraded connections"), for http_server.c. Not for use outside
 * libcommon's http_*.c. */
#ifndef TESSERA_HTTP_UPGRADE_H
#define TESSERA_HTTP_UPGRADE_H

#include "libcommon/http_request.h"

/* An upgrade's MHD response, made from src (SRC_UPGRADE; moved out of it
 * into a box that impl->upgrade also holds), or NULL. */
struct MHD_Response *http_upgrade_response(struct http_req_impl *impl, body_src *src);
/* The request is done (libmicrohttpd's completion): its share of the box;
 * an upgrade that has not happened by now never will (release(cls) runs). */
void http_upgrade_unref(struct http_upgrade_box *box);

#endif
