/* streams.h: Backend.AI's streams (docs/sessions.md, "Streams"): WebSockets
 * the gateway upgrades itself and relays to the session's kernel, and the
 * REST interrupt of the execute streams.
 *
 *   GET  /stream/session/{name}/pty        terminal: JSON messages <-> tessera-term's /ws
 *   GET  /stream/session/{name}/execute    code execution <-> tessera-term's /exec
 *                                          (streams_exec.h)
 *   GET  /stream/session/{name}/apps       the session's apps (JSON, no upgrade)
 *   GET  /stream/session/{name}/httpproxy?app=NAME[&port=N]
 *   GET  /stream/session/{name}/tcpproxy?app=NAME[&port=N]
 *                                          binary frames <-> one TCP connection to the app
 *   POST /session/{name}/interrupt         (also /kernel/...) SIGINT to the session's execute
 * streams held by this gateway instance; 204
 *
 * Who may: as every session route (verify.c; a console login under /func
 * too, where a WebSocket's Origin stands for the CSRF token: websession.c),
 * on a session the registry shows the caller (another user's: 404), RUNNING
 * (else 409), all checked before the upgrade. The handshake's own checks
 * fail with a 400 problem. Streams past gateway.max_streams get 503.
 *
 * Reaching the kernel: the session's built-in terminal app (ttyd, tessera-
 * term) or the named app, started on demand (session_apps.h), at its
 * published host port, straight from the gateway. Each upgraded stream runs
 * in a thread of its own (never an HTTP worker). */
#ifndef GATEWAY_STREAMS_H
#define GATEWAY_STREAMS_H

#include "gateway.h"

/* The largest message a stream takes from a client (then close 1009). */
#define STREAMS_MAX_MESSAGE (1 << 20)

void streams_routes(gateway *gw);
/* Streams open now. */
int streams_open(void);
/* End every stream (close 1001) and wait for their threads, at most
 * timeout_ms: before the HTTP server stops. */
void streams_stop(int64_t timeout_ms);

#endif
