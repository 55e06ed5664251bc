/* reply.h: the proxy's own answers, as whole HTTP/1.1 messages: an error as
 * problem JSON (docs/api.md), or as an HTML page for a browser (its request's
 * Accept names text/html), each with a text that says what happened and what
 * to do (401: the link is unknown or expired, 403: another app's link, ...);
 * a redirect (302) has no body worth reading. */
#ifndef WSPROXY_REPLY_H
#define WSPROXY_REPLY_H

#include <stdbool.h>
#include <stddef.h>

/* The whole message (heap, *len bytes): status line, Content-Type,
 * Content-Length, Cache-Control: no-store, extra_headers ("Name: value\r\n"
 * lines, may be NULL), "Connection: close" unless keepalive, the body. detail
 * (may be NULL) is added to the text. */
char *reply_message(int status, const char *detail, const char *extra_headers, bool keepalive,
                    bool html, size_t *len);

#endif
