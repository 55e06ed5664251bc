/* response.h: the app's response head and the end of a request. The head
 * goes on as the app sent it, or rewritten (bare LF made CRLF; the app cookie
 * a token minted added as Set-Cookie); 1xx heads pass and the wait goes on; a
 * 101 must answer an upgrade request, and a WebSocket one with the
 * Sec-WebSocket-Accept of the client's key, before the connection becomes a
 * tunnel. A head that is too large or malformed, or an app that closes before
 * it, is a 502 (after one retry on a fresh connection when a reused
 * keep-alive one closed). */
#ifndef WSPROXY_RESPONSE_H
#define WSPROXY_RESPONSE_H

#include "services/wsproxy/conn.h"

/* The connection waits for the response head (DN_HEAD): handle it when uin
 * holds a complete one. */
void response_try_head(conn *c);
/* The response ended: the next request may come on a kept-alive connection,
 * else the connection ends. */
void response_done(conn *c);

#endif
