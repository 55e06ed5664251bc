/* upstream.h: a connection's way to its app (the route's host:port): a
 * non-blocking connect registered with the worker's epoll (a name is resolved
 * here, blocking), one retry of a request without a body when a reused
 * keep-alive connection closed before answering, and what a failure becomes:
 * an error reply before the response began (502, 504), else the end of the
 * connection. A tcp app gets our 101 once it accepted the connection. */
#ifndef WSPROXY_UPSTREAM_H
#define WSPROXY_UPSTREAM_H

#include "services/wsproxy/conn.h"

/* Connect to c->u_host:c->u_port; false when it cannot even start. */
bool upstream_connect(conn *c) TS_MUST_CHECK;
/* The app failed: an error reply (status, why as its detail) while nothing of
 * the response was sent, else the connection ends. */
void upstream_failed(conn *c, int status, const char *why);
/* Send the request again on a fresh connection; false when it may not (a
 * body, tried already, a response begun) or cannot. */
bool upstream_retry(conn *c) TS_MUST_CHECK;
/* A tcp app accepted the connection: our 101 to the client, then the tunnel. */
void upstream_tcp_connected(conn *c);

#endif
