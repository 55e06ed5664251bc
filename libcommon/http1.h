/* http1.h: HTTP/1.1 message heads and chunked bodies, parsed strictly enough
 * that a proxy in front of arbitrary apps cannot be used to smuggle requests.
 *
 * The parser works on a complete head (find its end with h1_head_end first)
 * in the caller's buffer; h1_msg points into that buffer. Refused, with the
 * status the client should get:
 *   - a head without a terminating empty line within max bytes, or more than
 *     H1_MAX_HEADERS fields: 431;
 *   - bare LF or CR, NUL or other control characters, obs-fold (continuation
 *     lines), whitespace before the colon, a field name that is not a token: 400;
 *   - Content-Length and Transfer-Encoding together, Content-Length twice
 *     (even with the same value), a Content-Length that is not 1..18 digits,
 *     Transfer-Encoding twice or on an HTTP/1.0 request: 400;
 *   - a request Transfer-Encoding other than exactly "chunked": 501;
 *   - a version other than HTTP/1.0 or HTTP/1.1: 505; Host missing (1.1) or
 *     repeated: 400.
 * The chunked decoder (h1_chunked_feed) accepts hex sizes of at most 15 digits,
 * chunk extensions and trailers within limits, and CRLF only.
 *
 * Used by tessera-wsproxy's proxy listener and by every service's HTTP server
 * (http_front.c checks each connection's first request head with it before
 * libmicrohttpd sees the connection). libc only: tessera-term links it alone. */
#ifndef TESSERA_HTTP1_H
#define TESSERA_HTTP1_H

#include "libcommon/common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define H1_MAX_HEADERS 96
#define H1_MAX_METHOD 32 /* longer methods: 400 */

typedef struct h1_header {
    const char *name;
    size_t name_len;
    const char *value; /* trimmed of surrounding spaces and tabs */
    size_t value_len;
} h1_header;

typedef enum h1_body {
    H1_BODY_NONE = 0,    /* no body (or Content-Length: 0) */
    H1_BODY_LENGTH,      /* content_length bytes */
    H1_BODY_CHUNKED,     /* chunked: feed h1_chunked to find the end */
    H1_BODY_UNTIL_CLOSE, /* responses only: until the server closes */
} h1_body;

typedef struct h1_msg {
    /* request line */
    const char *method;
    size_t method_len;
    const char *target;
    size_t target_len;
    /* status line */
    int status;
    int minor;       /* HTTP/1.<minor> */
    size_t head_len; /* bytes of the head, final CRLF CRLF included */
    h1_header headers[H1_MAX_HEADERS];
    int n_headers;
    h1_body body;
    uint64_t content_length;
    bool keep_alive;     /* per version and Connection */
    bool conn_upgrade;   /* Connection lists "upgrade" */
    const char *upgrade; /* the Upgrade value when Connection lists upgrade, else NULL */
    size_t upgrade_len;
    bool expect_continue; /* Expect: 100-continue */
    const char *host;
    size_t host_len;
    /* on error */
    int err_status;
    const char *err_reason;
} h1_msg;

/* Where the head ends: the offset just past "\r\n\r\n", or 0 when not yet
 * there. from: where an earlier search stopped (the caller keeps it; 0 first). */
size_t h1_head_end(const char *buf, size_t len, size_t from);

/* Responses only (RFC 9112 2.2: a recipient may take a bare LF as a line
 * end; nginx does, and apps such as busybox httpd's CGI send them): where a
 * response head ends, the first empty line whether its lines end in CRLF or
 * LF, or 0 when not yet there; *bare_lf: some line ends in a bare LF. */
size_t h1_response_head_end(const char *buf, size_t len, bool *bare_lf);
/* The head with every bare LF made CRLF (heap, *out_len set; NULL when out of
 * memory), for the strict parser and the client. */
char *h1_head_crlf(const char *buf, size_t len, size_t *out_len);

/* Whether the bytes of an incomplete request head can no longer become a
 * valid request line (garbage, a bad method or target): reject at once
 * instead of waiting for the header timeout. */
bool h1_request_start_bad(const char *buf, size_t len) TS_MUST_CHECK;

/* Parse a request head of head_len bytes (from h1_head_end). True when sane;
 * false with m->err_status / m->err_reason set. */
bool h1_parse_request(const char *buf, size_t head_len, h1_msg *m) TS_MUST_CHECK;

/* Parse a response head; request_was_head: the request was HEAD (no body). */
bool h1_parse_response(const char *buf, size_t head_len, bool request_was_head,
                       h1_msg *m) TS_MUST_CHECK;

/* The first field named name (case-insensitive), or NULL. */
const h1_header *h1_find(const h1_msg *m, const char *name);
/* Case-insensitive comparison of a byte span and a C string. */
bool h1_span_eq(const char *s, size_t n, const char *lit) TS_MUST_CHECK;
/* Whether a comma-separated list (Connection, Upgrade) contains token. */
bool h1_list_has(const char *s, size_t n, const char *token) TS_MUST_CHECK;

/* The chunked decoder: a state machine fed bytes as they arrive. */
typedef struct h1_chunked {
    int state;
    uint64_t remaining; /* of the current chunk's data */
    int digits;         /* size digits seen */
    size_t line;        /* bytes in the current extension / trailer line */
    size_t trailers;    /* bytes of trailers so far */
} h1_chunked;

typedef enum h1c_result { H1C_MORE = 0, H1C_DONE = 1, H1C_ERROR = -1 } h1c_result;

void h1_chunked_init(h1_chunked *c);
/* Feed len bytes. *consumed: how many belong to the body (all of them with
 * H1C_MORE; up to and including the final CRLF with H1C_DONE). on_data, when
 * not NULL, receives the decoded data. H1C_ERROR: malformed (the message is
 * unrecoverable; answer 400 / close). */
h1c_result h1_chunked_feed(h1_chunked *c, const char *p, size_t len, size_t *consumed,
                           void (*on_data)(void *ctx, const char *p, size_t n), void *ctx);

#endif
