/* term_ws.h: the WebSocket side of tessera-term's connections (term.c's /ws
 * and term_exec.c's /exec): writing frames and reading whole messages from a
 * client, over wsframe.h. Plain C and libc (tessera-term is static). */
#ifndef TERM_WS_H
#define TERM_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "services/wsproxy/wsframe.h"

#define TW_MAX_FRAME (1 << 20) /* a frame or message over this: close 1009 */

/* write(2) all of p; 0, or -1 on an error. */
int tw_write_all(int fd, const void *p, size_t n);

/* One unmasked, final frame (server to client); 0, or -1 on an error. */
int tw_send(int fd, int opcode, const void *p, size_t n);

/* A close frame with a status code and a short reason (may be NULL). */
int tw_send_close(int fd, unsigned code, const char *reason);

/* A client's frames, read from a socket and put together into messages. */
typedef struct tw_in {
    uint8_t buf[TW_MAX_FRAME + WSF_MAX_HEADER]; /* bytes read, not yet parsed */
    size_t have;
    uint8_t msg[TW_MAX_FRAME]; /* the message being put together */
    size_t msg_len;
    int msg_op; /* its opcode (WSF_TEXT, WSF_BINARY); 0: none */
} tw_in;

typedef enum tw_next_result {
    TW_MORE,    /* nothing complete: read more (tw_in_read) */
    TW_MESSAGE, /* a whole text or binary message in msg[0..msg_len) */
    TW_CLOSED,  /* the client closed: the close was answered */
    TW_FAIL,    /* a protocol error or an oversized frame: a close was sent
                   (1002, 1009) */
} tw_next_result;

/* Read what the socket has into in->buf: >0 bytes read, 0 at EOF, -1 on an
 * error (EINTR, EAGAIN: -1 with errno set). */
long tw_in_read(tw_in *in, int fd);

/* The next message from the bytes read: pings are answered (pong) and pongs
 * skipped on the way. After TW_MESSAGE the message stays in msg until the
 * next call. */
tw_next_result tw_in_next(tw_in *in, int fd);

#endif
