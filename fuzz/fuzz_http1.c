/* fuzz_http1.c: libcommon/http1.c as tessera-wsproxy drives it. The first
 * byte picks: a request head from a client, a response head from an app
 * (HEAD or not), or a chunked body fed in pieces of the next byte's size.
 * Checks: lengths and pointers stay inside the input, a refusal carries a
 * status and a reason, the chunked decoder never claims more than it got. */
#include "libcommon/http1.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void in_range(const char *base, size_t len, const char *p, size_t n)
{
    if (n == 0) return;
    if (!p || p < base || p + n > base + len) abort();
}

static void check_msg(const char *buf, size_t len, const h1_msg *m)
{
    if (m->n_headers < 0 || m->n_headers > H1_MAX_HEADERS) abort();
    for (int i = 0; i < m->n_headers; i++) {
        in_range(buf, len, m->headers[i].name, m->headers[i].name_len);
        in_range(buf, len, m->headers[i].value, m->headers[i].value_len);
        if (m->headers[i].name_len == 0) abort();
    }
    in_range(buf, len, m->host, m->host_len);
    in_range(buf, len, m->upgrade, m->upgrade_len);
}

static void sink(void *ctx, const char *p, size_t n)
{
    size_t *total = ctx;
    (void)p;
    *total += n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    int mode = data[0] % 4;
    size_t piece = (size_t)data[1] + 1;
    const char *buf = (const char *)data + 2;
    size_t len = size - 2;
    h1_msg m;
    if (mode <= 2) {
        if (h1_request_start_bad(buf, len) && mode == 0) {
            /* a refused start never becomes a good request */
            size_t end = h1_head_end(buf, len, 0);
            if (end && h1_parse_request(buf, end, &m)) abort();
        }
        bool bare_lf = false;
        size_t end =
            mode == 0 ? h1_head_end(buf, len, 0) : h1_response_head_end(buf, len, &bare_lf);
        if (end > len) abort();
        if (!end) return 0;
        bool ok =
            mode == 0 ? h1_parse_request(buf, end, &m) : h1_parse_response(buf, end, mode == 2, &m);
        if (ok) {
            check_msg(buf, end, &m);
            if (mode == 0) {
                in_range(buf, end, m.method, m.method_len);
                in_range(buf, end, m.target, m.target_len);
                if (!m.method_len || !m.target_len) abort();
            }
        } else if (m.err_status < 400 || m.err_status > 599 || !m.err_reason) {
            abort();
        }
        return 0;
    }
    h1_chunked c;
    h1_chunked_init(&c);
    size_t total = 0, off = 0;
    while (off < len) {
        size_t n = len - off < piece ? len - off : piece;
        size_t used = 0;
        int r = h1_chunked_feed(&c, buf + off, n, &used, sink, &total);
        if (used > n) abort();
        if (r == H1C_MORE && used != n) abort();
        if (r != H1C_MORE) break;
        off += used;
    }
    if (total > len) abort();
    return 0;
}
