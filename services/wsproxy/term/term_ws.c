/* term_ws.c: tessera-term's WebSocket frames (term_ws.h). */
#include "services/wsproxy/term/term_ws.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int tw_write_all(int fd, const void *p, size_t n)
{
    const char *s = p;
    while (n > 0) {
        ssize_t k = write(fd, s, n);
        if (k < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        s += k;
        n -= (size_t)k;
    }
    return 0;
}

int tw_send(int fd, int opcode, const void *p, size_t n)
{
    uint8_t h[WSF_MAX_HEADER];
    size_t hl = wsf_write_header(h, true, opcode, n, NULL);
    if (tw_write_all(fd, h, hl) != 0) return -1;
    return n ? tw_write_all(fd, p, n) : 0;
}

int tw_send_close(int fd, unsigned code, const char *reason)
{
    uint8_t b[125];
    size_t rl = reason ? strlen(reason) : 0;
    if (rl > sizeof(b) - 2) rl = sizeof(b) - 2;
    b[0] = (uint8_t)(code >> 8);
    b[1] = (uint8_t)code;
    if (rl) memcpy(b + 2, reason, rl);
    return tw_send(fd, WSF_CLOSE, b, 2 + rl);
}

long tw_in_read(tw_in *in, int fd)
{
    if (in->have == sizeof(in->buf)) return -1; /* cannot happen: a frame fits */
    ssize_t n = read(fd, in->buf + in->have, sizeof(in->buf) - in->have);
    if (n > 0) in->have += (size_t)n;
    return (long)n;
}

tw_next_result tw_in_next(tw_in *in, int fd)
{
    for (;;) {
        wsf_frame f;
        wsf_parse_result r = wsf_parse_header(in->buf, in->have, &f);
        if (r == WSF_NEED_MORE) return TW_MORE;
        if (r == WSF_BAD_FRAME || !f.masked) {
            tw_send_close(fd, 1002, "bad frame");
            return TW_FAIL;
        }
        if (f.len > TW_MAX_FRAME) {
            tw_send_close(fd, 1009, "frame over 1 MiB");
            return TW_FAIL;
        }
        if (in->have < f.header_len + f.len) return TW_MORE;
        uint8_t *pl = in->buf + f.header_len;
        size_t len = (size_t)f.len;
        wsf_mask(pl, len, f.mask, 0);
        size_t used = f.header_len + len;
        tw_next_result out = TW_MORE;
        if (f.opcode == WSF_CLOSE) {
            tw_send(fd, WSF_CLOSE, pl, len >= 2 ? 2 : 0);
            return TW_CLOSED;
        } else if (f.opcode == WSF_PING) {
            if (tw_send(fd, WSF_PONG, pl, len) != 0) return TW_FAIL;
        } else if (f.opcode == WSF_PONG) {
            /* nothing to do */
        } else {
            /* data: a new message (text, binary) or the rest of one (cont) */
            if ((f.opcode == WSF_CONT) != (in->msg_op != 0)) {
                tw_send_close(fd, 1002, "bad fragmentation");
                return TW_FAIL;
            }
            if (f.opcode != WSF_CONT) {
                in->msg_op = f.opcode;
                in->msg_len = 0;
            }
            if (in->msg_len + len > TW_MAX_FRAME) {
                tw_send_close(fd, 1009, "message over 1 MiB");
                return TW_FAIL;
            }
            memcpy(in->msg + in->msg_len, pl, len);
            in->msg_len += len;
            if (f.fin) out = TW_MESSAGE;
        }
        memmove(in->buf, in->buf + used, in->have - used);
        in->have -= used;
        if (out == TW_MESSAGE) {
            in->msg_op = 0; /* the next data frame starts a new message */
            return TW_MESSAGE;
        }
    }
}
