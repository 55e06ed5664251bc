/* ws_use.h: which of a client's bytes on a WebSocket tunnel are use of the
 * session (the registry's idle checker, docs/sessions.md "Idle
 * reclamation"). Data frames (text, binary, continuation) are; control
 * frames (ping, pong, close) are not, so a browser tab that only answers
 * an app's pings does not keep the session.
 *
 * A streaming reader of the client's frame headers (RFC 6455 5.2): it keeps
 * at most one partial header (14 bytes) and the count of payload bytes left
 * in the current frame, and skips payloads without looking at them, so a
 * recv costs one comparison plus one header parse per frame that starts in
 * it. Reserved bits are ignored (extensions such as permessage-deflate set
 * them). Bytes that are not WebSocket frames (an unknown opcode, a control
 * frame over 125 bytes or fragmented) turn it off for the connection: every byte counts again, as
 * on a TCP tunnel. */
#ifndef WSPROXY_WS_USE_H
#define WSPROXY_WS_USE_H

#include "libcommon/wsframe.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ws_use {
    uint64_t skip; /* payload bytes of the current frame still to come */
    uint8_t hdr[WSF_MAX_HEADER];
    uint8_t hlen; /* bytes of a partial header in hdr */
    bool in_data; /* the current frame is a data frame */
    bool off;     /* not frames: every byte counts */
} ws_use;

/* A reader at the start of the client's first frame. */
void ws_use_init(ws_use *u);

/* The client's next n bytes: true when any of them belongs to a data frame
 * (or the reader is off). */
bool ws_use_feed(ws_use *u, const uint8_t *p, size_t n) TS_MUST_CHECK;

#endif
