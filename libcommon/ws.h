/* ws.h: WebSocket connections (RFC 6455) over a blocking-or-not socket, for
 * the gateway's streams (services/gateway/streams*.c): the server side of a
 * connection the HTTP server upgraded (http_reply_upgrade, http.h) and the
 * client side of one the gateway opens to a kernel's app (ws_client_open).
 * Built on wsframe.h (frame headers, masking, handshake key).
 *
 * Reading is split so that one thread can poll(2) several connections: when
 * the socket is readable, ws_conn_fill reads what is there; then ws_conn_next
 * hands out the complete messages the buffer holds, one per call: text and
 * binary messages reassembled from their fragments, and close frames. Pings
 * are answered (pong) and pongs dropped inside. A message over max_msg, or a
 * protocol error (a client's unmasked frame, a server's masked one, a
 * continuation without a start, a new message inside a fragmented one, text
 * that is not UTF-8 is not checked) ends the connection: ws_conn_next says
 * which close code to send (1009, 1002).
 *
 * Writing (ws_conn_send, ws_conn_close) is thread-safe (one lock per
 * connection): a client side's frames are masked with a fresh random mask.
 * A write waits at most WS_WRITE_TIMEOUT_MS for a peer that does not read. */
#ifndef TESSERA_WS_H
#define TESSERA_WS_H

#include "libcommon/common.h"
#include "libcommon/wsframe.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WS_WRITE_TIMEOUT_MS 10000

typedef struct ws_conn ws_conn;

typedef enum ws_role {
    WS_SERVER, /* the peer is a client: its frames must be masked, ours are not */
    WS_CLIENT, /* the peer is a server: ours are masked */
} ws_role;

/* A connection on fd (which it owns and closes in ws_conn_free); pre: bytes
 * already read after the handshake (may be NULL). max_msg: the largest
 * message it takes (whole, after reassembly). */
ws_conn *ws_conn_new(int fd, ws_role role, const void *pre, size_t pre_len, size_t max_msg);
/* Close the socket and free. NULL is fine. */
void ws_conn_free(ws_conn *c);
int ws_conn_fd(const ws_conn *c);
/* ws_conn_free will not close the socket (an upgraded connection's socket is
 * closed by http_upgraded_close). */
void ws_conn_forget_fd(ws_conn *c);

/* Read what the socket has (one read(2)); false at EOF or on an error (the
 * messages already buffered can still be taken with ws_conn_next). A
 * non-blocking socket without data: true. */
bool ws_conn_fill(ws_conn *c) TS_MUST_CHECK;

typedef enum ws_next {
    WS_NEXT_NONE,    /* no complete message buffered: fill again */
    WS_NEXT_MESSAGE, /* *opcode WSF_TEXT or WSF_BINARY, *data / *len the payload */
    WS_NEXT_CLOSE,   /* the peer's close frame: *close_code (WSF_CLOSE_NO_STATUS when none) */
    WS_NEXT_ERROR,   /* a protocol error: send a close with *close_code and end */
} ws_next;

/* The next complete message. *data stays valid until the next call (NUL-
 * terminated for convenience; the payload may hold NULs). */
ws_next ws_conn_next(ws_conn *c, int *opcode, const uint8_t **data, size_t *len, int *close_code);

/* One unfragmented frame (WSF_TEXT, WSF_BINARY, WSF_PING, ...). False when the
 * peer is gone or does not read within WS_WRITE_TIMEOUT_MS. */
bool ws_conn_send(ws_conn *c, int opcode, const void *data, size_t len) TS_MUST_CHECK;
/* A close frame with code and reason (once; later calls do nothing). */
void ws_conn_close(ws_conn *c, int code, const char *reason);
/* The end of a connection: no more writes (FIN), and what the peer still
 * sends is read and dropped until it closes, at most timeout_ms, so that a
 * peer still writing (a message over the limit) reads our close frame
 * instead of a reset. */
void ws_conn_linger(ws_conn *c, int timeout_ms);
/* Whether a close frame went out. */
bool ws_conn_close_sent(const ws_conn *c) TS_MUST_CHECK;

/* ---- handshakes ------------------------------------------------------------------ */

/* The server's checks of an upgrade request (RFC 6455 4.2.1): method GET,
 * Upgrade: websocket, Connection listing upgrade, Sec-WebSocket-Version 13, a
 * Sec-WebSocket-Key of 16 bytes in base64. Any value may be NULL (absent).
 * True: accept holds Sec-WebSocket-Accept. False: *why says what is wrong
 * (static text, for a 400 problem). */
bool ws_handshake_check(const char *method, const char *upgrade, const char *connection,
                        const char *version, const char *key, char accept[WSF_ACCEPT_LEN + 1],
                        const char **why) TS_MUST_CHECK;

/* A TCP connection to host:port (a name or an address; IPv6 bare), within
 * timeout_ms; blocking afterwards, TCP_NODELAY, close-on-exec. -1 with err. */
int ws_tcp_connect(const char *host, int port, int timeout_ms, ts_err *err);

/* Open a WebSocket as a client: GET path (with its query) on host:port,
 * within timeout_ms; checks the 101 answer and its Sec-WebSocket-Accept.
 * NULL with err (the HTTP status when the server answered something else). */
ws_conn *ws_client_open(const char *host, int port, const char *path, int timeout_ms,
                        size_t max_msg, ts_err *err);

#endif
