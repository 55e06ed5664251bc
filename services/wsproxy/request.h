/* request.h: a request head from the client. Once it is complete (or too
 * long: 414, 431): parsed strictly (libcommon/http1.c: 400 and the like),
 * authorized (access.h: 401, 403, 409, 503), a WebSocket upgrade's
 * Sec-WebSocket-Key checked, then either our own reply (a browser opening an
 * app link gets its cookie and a 302 to the address without the token) or the
 * head rewritten for the app (our token and cookies taken out, X-Forwarded-*
 * added, Connection normalized) and sent on a connection to the route's
 * target (kept alive across requests to the same target). A tcp app's
 * request (Upgrade: tessera-tcp) becomes a tunnel. */
#ifndef WSPROXY_REQUEST_H
#define WSPROXY_REQUEST_H

#include "services/wsproxy/conn.h"

/* The connection waits for a request head (UP_HEAD, DN_IDLE): handle it when
 * cin holds a complete one. */
void request_try_head(conn *c);

#endif
