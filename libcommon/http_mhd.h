/* http_mhd.h: libmicrohttpd adapters for the HTTP server (http_server.c): a
 * streamed response body as libmicrohttpd's response, and libmicrohttpd's
 * log lines and panics in our log. Not for use outside libcommon's
 * http_*.c. */
#ifndef TESSERA_HTTP_MHD_H
#define TESSERA_HTTP_MHD_H

#include "libcommon/http_request.h"

#include <stdarg.h>

struct MHD_Response;

/* The response for a streamed body (a file, a reader, an upgrade); the
 * source moves into it (src is empty after). NULL when libmicrohttpd made
 * none. */
struct MHD_Response *http_mhd_response(struct http_req_impl *impl, body_src *src);

/* libmicrohttpd's logger (MHD_OPTION_EXTERNAL_LOGGER): warn, but a client's
 * going away or failed TLS handshake is only debug. */
void http_mhd_log(void *cls, const char *fmt, va_list ap);
/* The next "Application reported internal error" line on this thread is
 * not logged (the server answered the request itself and said so). */
void http_mhd_log_quiet_once(void);
/* libmicrohttpd's panic function: its broken invariant named in our log
 * before the abort. */
void http_mhd_panic(void *cls, const char *file, unsigned int line, const char *reason);

#endif
