/* http_front.h: the door in front of libmicrohttpd. libmicrohttpd answers the
 * requests it cannot parse itself, in HTML (or not at all: a garbage request
 * line is dropped, a request line that never ends waits for the idle timeout),
 * and has no hook to change that. So the server accepts connections here, one
 * thread for all of them, and looks (MSG_PEEK: nothing is consumed) at each
 * connection's first request head before libmicrohttpd gets the socket:
 *   - a head that is well-formed (libcommon/http1.h's strict parser) goes to
 *     libmicrohttpd untouched (MHD_add_connection);
 *   - a malformed one is answered here at once with problem JSON and closed:
 *     400 (syntax, bare LF, control characters, bad or conflicting framing
 *     headers, Host missing), 414 (request line over max_line), 431 (head over
 *     max_head or too many fields), 501 (a Transfer-Encoding but chunked),
 *     505 (an HTTP version but 1.0 and 1.1);
 *   - a head not complete within header_timeout gets 408 (nothing sent at all:
 *     the connection is just closed).
 * A refused connection is half-closed after the answer and read until the
 * client closes (at most LINGER_MS), so the answer is not lost to a reset.
 *
 * Only the first request of a connection passes here: later requests on a
 * kept-alive connection are parsed by libmicrohttpd alone (docs/api.md, "Bad
 * input", says what it still answers in HTML).
 *
 * A TLS listener (opts.tls): the bytes are ciphertext, so no head is judged.
 * The front looks at the first byte only: a TLS handshake record goes to
 * libmicrohttpd as it is (its TLS session, then its own parsing of every
 * head); anything else, such as a plain HTTP request, gets 400 problem JSON
 * in plain text ("this port speaks TLS: use https://") and is closed. The
 * header timeout covers that first byte only (no byte in time: closed). */
#ifndef TESSERA_HTTP_FRONT_H
#define TESSERA_HTTP_FRONT_H

#include "libcommon/common.h"

#include <sys/socket.h>

typedef struct http_front_limits {
    size_t max_line; /* request line, CRLF excluded; longer: 414 */
    size_t max_head; /* whole head, final CRLF CRLF included; longer: 431 */
} http_front_limits;

typedef enum http_front_result {
    HTTP_FRONT_MORE, /* valid so far: wait for more bytes */
    HTTP_FRONT_OK,   /* a complete, well-formed head (head_len bytes) */
    HTTP_FRONT_BAD,  /* refuse with status, reason */
} http_front_result;

typedef struct http_front_verdict {
    int status;         /* HTTP_FRONT_BAD: 400, 414, 431, 501 or 505 */
    const char *reason; /* static text */
    size_t head_len;    /* HTTP_FRONT_OK */
} http_front_verdict;

/* Judge the first len bytes a client sent (a prefix of its first request).
 * Pure: the unit tests and fuzz_http_front call it directly. */
http_front_result http_front_check(const char *buf, size_t len, const http_front_limits *lim,
                                   http_front_verdict *v);

/* A complete HTTP/1.1 answer (status line, headers, problem JSON body) with
 * "Connection: close". server: the Server header's value (may be NULL);
 * request_id: X-Request-ID (may be NULL). Heap; *len its length. */
char *http_front_problem_response(int status, const char *msg, const char *request_id,
                                  const char *server, size_t *len);
/* The problem kind ("bad-request", "uri-too-long", "auth-failed", ...) of a
 * status answered outside a handler (here, and tessera-wsproxy's own answers). */
const char *http_front_kind(int status);

/* Write all of data to the (non-blocking) socket, waiting at most timeout_ms
 * for room. False when the peer is gone or the time ran out. */
bool http_front_write_all(int fd, const char *data, size_t len, int timeout_ms) TS_MUST_CHECK;

typedef struct http_front http_front;

#define HTTP_FRONT_MAX_LISTENERS 4

typedef struct http_front_opts {
    int listen_fd; /* listening, non-blocking; stays the caller's */
    int header_timeout_ms;
    bool tls; /* the listener speaks TLS: judge the first byte only (above) */
    http_front_limits limits;
    const char *server; /* Server header of the answers given here */
    /* A connection whose first head is fine: the callee owns fd from now on. */
    void (*handoff)(int fd, const struct sockaddr *addr, socklen_t addr_len, void *ctx);
    /* A connection refused here (status), or timed out (408); may be NULL. */
    void (*refused)(int status, void *ctx);
    void *ctx;
} http_front_opts;

http_front *http_front_start(const http_front_opts *opts, ts_err *err) TS_MUST_CHECK;
/* Accept on fd too (listening, non-blocking; stays the caller's) from the
 * front thread's next turn; any thread. False when the front has
 * HTTP_FRONT_MAX_LISTENERS already. */
bool http_front_add_listener(http_front *f, int fd, ts_err *err) TS_MUST_CHECK;
/* Stop accepting; connections already accepted are still judged. */
void http_front_quiesce(http_front *f);
/* Take fd (an answer has been written on it): half-close it, read and drop
 * what the client still sends, close it when the client closes or after
 * LINGER_MS. Any thread. */
void http_front_linger(http_front *f, int fd);
/* Answer a request on a connection that libmicrohttpd holds, outside it: the
 * problem response (http_front_problem_response) written on fd, then a
 * duplicate of fd lingers here, so the answer is not lost to a reset while
 * libmicrohttpd drops the connection. False when it could not be written. */
bool http_front_answer(http_front *f, int fd, int status, const char *msg, const char *request_id,
                       const char *server) TS_MUST_CHECK;
/* Close everything still here and end the thread. */
void http_front_stop(http_front *f);

#endif
