/* wsframe.h: RFC 6455 pieces shared by tessera-wsproxy (checking a backend's
 * Sec-WebSocket-Accept before it turns a connection into a tunnel),
 * tessera-term (a WebSocket server in a container) and the gateway's streams
 * (ws.h builds its connections on these): SHA-1, base64, the handshake key,
 * frame headers, masking, close codes. Plain C, no libcommon: tessera-term
 * is linked statically from this file, http1.c and term/term.c alone. */
#ifndef TESSERA_WSFRAME_H
#define TESSERA_WSFRAME_H

#include "libcommon/common.h" /* TS_MUST_CHECK only: nothing of libcommon is linked */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    WSF_CONT = 0x0,
    WSF_TEXT = 0x1,
    WSF_BINARY = 0x2,
    WSF_CLOSE = 0x8,
    WSF_PING = 0x9,
    WSF_PONG = 0xA,
};

/* Close status codes (RFC 6455 7.4.1). */
enum {
    WSF_CLOSE_NORMAL = 1000,
    WSF_CLOSE_GOING_AWAY = 1001,
    WSF_CLOSE_PROTOCOL = 1002,
    WSF_CLOSE_UNSUPPORTED = 1003,
    WSF_CLOSE_NO_STATUS = 1005, /* never sent: a close frame without a code */
    WSF_CLOSE_ABNORMAL = 1006,  /* never sent: the connection ended without a close */
    WSF_CLOSE_BAD_DATA = 1007,
    WSF_CLOSE_POLICY = 1008,
    WSF_CLOSE_TOO_BIG = 1009,
    WSF_CLOSE_INTERNAL = 1011,
};

#define WSF_ACCEPT_LEN 28 /* base64 of a SHA-1 digest */
#define WSF_MAX_HEADER 14 /* 2 + 8 (length) + 4 (mask) */

void wsf_sha1(const void *data, size_t len, uint8_t out[20]);

/* Standard base64 with padding; out needs 4 * ((len + 2) / 3) + 1 bytes.
 * Returns the length written (without the NUL). */
size_t wsf_base64(const uint8_t *in, size_t len, char *out);

/* A Sec-WebSocket-Key is the base64 of 16 bytes: 24 characters ending "==". */
bool wsf_key_valid(const char *key, size_t len) TS_MUST_CHECK;

/* Sec-WebSocket-Accept = base64(SHA-1(key + GUID)). */
void wsf_accept(const char *key, size_t len, char out[WSF_ACCEPT_LEN + 1]);

typedef struct wsf_frame {
    bool fin;
    int opcode;
    bool masked;
    uint8_t mask[4];
    uint64_t len;      /* payload length */
    size_t header_len; /* bytes before the payload */
} wsf_frame;

typedef enum wsf_parse_result {
    WSF_HEADER,    /* complete: f filled */
    WSF_NEED_MORE, /* more bytes are needed */
    WSF_BAD_FRAME, /* a protocol error (reserved bits, unknown opcode, fragmented or
                      oversized control frame, a 64-bit length with its top bit) */
} wsf_parse_result;

/* Parse a frame header from n bytes. */
wsf_parse_result wsf_parse_header(const uint8_t *p, size_t n, wsf_frame *f);

/* XOR payload bytes with the mask; offset: position of p within the payload
 * (so a payload can be unmasked in pieces). */
void wsf_mask(uint8_t *p, size_t n, const uint8_t mask[4], uint64_t offset);

/* Write a frame header into out (WSF_MAX_HEADER bytes); mask NULL: unmasked
 * (server to client). Returns the header length. */
size_t wsf_write_header(uint8_t *out, bool fin, int opcode, uint64_t len, const uint8_t *mask);

/* A close frame's payload: the code (big-endian) and up to 123 bytes of
 * reason (cut there). out needs 125 bytes. Returns the payload length. */
size_t wsf_close_payload(uint8_t out[125], int code, const char *reason);

/* The code of a close frame's payload: WSF_CLOSE_NO_STATUS when it has none,
 * -1 when it is malformed (one byte, or a code no endpoint may send). */
int wsf_close_code(const uint8_t *p, size_t n);

#endif
