/* ws_use.c: see ws_use.h. */
#include "services/wsproxy/ws_use.h"

#include <string.h>

void ws_use_init(ws_use *u)
{
    memset(u, 0, sizeof(*u));
}

static bool is_data(int opcode)
{
    return opcode == WSF_TEXT || opcode == WSF_BINARY || opcode == WSF_CONT;
}

bool ws_use_feed(ws_use *u, const uint8_t *p, size_t n)
{
    bool data = false;
    while (n > 0 && !u->off) {
        if (u->skip > 0) {
            size_t k = u->skip < n ? (size_t)u->skip : n;
            u->skip -= k;
            p += k;
            n -= k;
            data = data || u->in_data;
            continue;
        }
        /* a header: complete what hdr holds with as much as it may need */
        size_t k = sizeof(u->hdr) - u->hlen < n ? sizeof(u->hdr) - u->hlen : n;
        memcpy(u->hdr + u->hlen, p, k);
        /* RSV1-3 belong to extensions (permessage-deflate sets RSV1 on
         * compressed data frames): they change no length */
        u->hdr[0] &= 0x8f;
        wsf_frame f;
        wsf_parse_result r = wsf_parse_header(u->hdr, u->hlen + k, &f);
        if (r == WSF_NEED_MORE) {
            u->hlen = (uint8_t)(u->hlen + k); /* k == n: all taken */
            p += k;
            n -= k;
            continue;
        }
        if (r == WSF_BAD_FRAME) {
            u->off = true;
            break;
        }
        size_t used = f.header_len - u->hlen; /* this header's bytes among the new ones */
        p += used;
        n -= used;
        u->hlen = 0;
        u->in_data = is_data(f.opcode);
        u->skip = f.len;
        data = data || u->in_data; /* an empty data frame is a message too */
    }
    return data || u->off;
}
