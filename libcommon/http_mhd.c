/* http_mhd.c: libmicrohttpd adapters for http_server.c (http_mhd.h). */
#include "libcommon/http_mhd.h"
#include "libcommon/http_upgrade.h"
#include "libcommon/log.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- streamed bodies ------------------------------------------------------------ */

typedef struct reader_box {
    body_src src;
} reader_box;

static ssize_t reader_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
    reader_box *b = cls;
    long n = b->src.read(b->src.cls, pos, buf, max);
    if (n == HTTP_READ_SUSPENDED) return 0; /* http_events.c: called again once resumed */
    if (n == 0) return MHD_CONTENT_READER_END_OF_STREAM;
    if (n < 0) return MHD_CONTENT_READER_END_WITH_ERROR;
    return (ssize_t)n;
}

static void reader_free(void *cls)
{
    reader_box *b = cls;
    http_src_release(&b->src);
    free(b);
}

struct MHD_Response *http_mhd_response(struct http_req_impl *impl, body_src *src)
{
    struct MHD_Response *mr = NULL;
    if (src->kind == SRC_UPGRADE) {
        mr = http_upgrade_response(impl, src);
    } else if (src->kind == SRC_FD) {
        if (src->len == 0) {
            mr = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        } else {
            mr = MHD_create_response_from_fd_at_offset64(src->len, src->fd, src->offset);
            if (mr) src->fd = -1; /* MHD closes it */
        }
        http_src_release(src);
    } else if (src->kind == SRC_READER) {
        reader_box *b = ts_calloc(1, sizeof(*b));
        b->src = *src;
        memset(src, 0, sizeof(*src));
        mr = MHD_create_response_from_callback(b->src.len == HTTP_SIZE_UNKNOWN ? MHD_SIZE_UNKNOWN
                                                                               : b->src.len,
                                               64 * 1024, reader_cb, b, reader_free);
        if (!mr) reader_free(b);
    }
    return mr;
}

/* ---- log lines and panics ------------------------------------------------------- */

static __thread bool t_quiet_once;

void http_mhd_log_quiet_once(void)
{
    t_quiet_once = true;
}

void http_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512], q[600];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    if (t_quiet_once) {
        t_quiet_once = false;
        if (strncmp(msg, "Application reported internal error", 35) == 0) return;
    }
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    /* a client that goes away mid-request (or after a 408 for a stalled
     * body), or whose TLS handshake fails, is the client's business */
    if (strstr(msg, "detected connection closure") || strstr(msg, "handshake") ||
        strstr(msg, "TLS fatal alert")) {
        TLOG_DEBUG("libmicrohttpd", "detail=%s", tlog_quote(q, sizeof(q), msg));
        return;
    }
    TLOG_WARN("libmicrohttpd", "detail=%s", tlog_quote(q, sizeof(q), msg));
}

void http_mhd_panic(void *cls, const char *file, unsigned int line, const char *reason)
{
    (void)cls;
    ts_panic_at(file ? file : "libmicrohttpd", (int)line, "libmicrohttpd: %s",
                reason ? reason : "internal error");
}
