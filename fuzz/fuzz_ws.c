/* fuzz_ws.c: arbitrary bytes as what a WebSocket peer sends (libcommon/ws.c,
 * the gateway's streams): the first byte picks the side (even: we are the
 * server, the peer's frames must be masked; odd: the client) and the message
 * limit; the rest is the peer's bytes, handed out by ws_conn_next. Checks:
 * every message is text or binary within the limit and NUL-terminated; a
 * close has a code an endpoint may send (or none); an error says 1002 or
 * 1009; the loop ends. Writes (pongs) go to a closed descriptor and fail. */
#include "libcommon/ws.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    ws_role role = data[0] & 1 ? WS_CLIENT : WS_SERVER;
    size_t max = (size_t)(data[0] >> 1) * 16 + 1;
    ws_conn *c = ws_conn_new(-1, role, data + 1, size - 1, max);
    for (size_t rounds = 0;; rounds++) {
        if (rounds > size + 1) abort(); /* each round takes a frame of at least 2 bytes */
        int op = 0, code = 0;
        const uint8_t *d = NULL;
        size_t n = 0;
        ws_next r = ws_conn_next(c, &op, &d, &n, &code);
        if (r == WS_NEXT_NONE) break;
        if (r == WS_NEXT_MESSAGE) {
            if ((op != WSF_TEXT && op != WSF_BINARY) || n > max || d[n] != '\0') abort();
            continue;
        }
        if (r == WS_NEXT_CLOSE) {
            if (code != WSF_CLOSE_NO_STATUS && (code < 1000 || code >= 5000)) abort();
            break;
        }
        if (code != WSF_CLOSE_PROTOCOL && code != WSF_CLOSE_TOO_BIG) abort();
        break;
    }
    ws_conn_free(c);
    return 0;
}
