/* wsframe.c: SHA-1 (FIPS 180-4), base64 (libsodium's) and RFC 6455 frame headers (wsframe.h). */
#include "libcommon/wsframe.h"

#include <sodium.h>
#include <string.h>

static uint32_t rol(uint32_t x, int n)
{
    return (x << n) | (x >> (32 - n));
}

static void sha1_block(uint32_t h[5], const uint8_t *b)
{
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
               (uint32_t)b[4 * i + 2] << 8 | (uint32_t)b[4 * i + 3];
    for (int i = 16; i < 80; i++)
        w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20)
            f = (bb & c) | (~bb & d), k = 0x5A827999;
        else if (i < 40)
            f = bb ^ c ^ d, k = 0x6ED9EBA1;
        else if (i < 60)
            f = (bb & c) | (bb & d) | (c & d), k = 0x8F1BBCDC;
        else
            f = bb ^ c ^ d, k = 0xCA62C1D6;
        uint32_t t = rol(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rol(bb, 30);
        bb = a;
        a = t;
    }
    h[0] += a;
    h[1] += bb;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

void wsf_sha1(const void *data, size_t len, uint8_t out[20])
{
    uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    const uint8_t *p = data;
    size_t left = len;
    while (left >= 64) {
        sha1_block(h, p);
        p += 64;
        left -= 64;
    }
    uint8_t tail[128];
    memset(tail, 0, sizeof(tail));
    memcpy(tail, p, left);
    tail[left] = 0x80;
    size_t tl = left + 1 + 8 <= 64 ? 64 : 128;
    uint64_t bits = (uint64_t)len * 8;
    for (int i = 0; i < 8; i++)
        tail[tl - 1 - i] = (uint8_t)(bits >> (8 * i));
    sha1_block(h, tail);
    if (tl == 128) sha1_block(h, tail + 64);
    for (int i = 0; i < 5; i++) {
        out[4 * i] = (uint8_t)(h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(h[i] >> 8);
        out[4 * i + 3] = (uint8_t)h[i];
    }
}

size_t wsf_base64(const uint8_t *in, size_t len, char *out)
{
    sodium_bin2base64(out, sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL), in, len,
                      sodium_base64_VARIANT_ORIGINAL);
    return strlen(out);
}

bool wsf_key_valid(const char *key, size_t len)
{
    /* 16 bytes, padded: the decoder refuses other lengths, other characters
     * and stray low bits in the last character before "==". */
    uint8_t raw[16];
    size_t got = 0;
    return len == 24 &&
           sodium_base642bin(raw, sizeof(raw), key, len, NULL, &got, NULL,
                             sodium_base64_VARIANT_ORIGINAL) == 0 &&
           got == sizeof(raw);
}

void wsf_accept(const char *key, size_t len, char out[WSF_ACCEPT_LEN + 1])
{
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    char buf[128 + sizeof(guid)];
    if (len > 128) len = 128;
    memcpy(buf, key, len);
    memcpy(buf + len, guid, sizeof(guid) - 1);
    uint8_t d[20];
    wsf_sha1(buf, len + sizeof(guid) - 1, d);
    wsf_base64(d, 20, out);
}

wsf_parse_result wsf_parse_header(const uint8_t *p, size_t n, wsf_frame *f)
{
    if (n < 2) return WSF_NEED_MORE;
    memset(f, 0, sizeof(*f));
    f->fin = (p[0] & 0x80) != 0;
    if (p[0] & 0x70) return WSF_BAD_FRAME;
    f->opcode = p[0] & 0x0f;
    switch (f->opcode) {
    case WSF_CONT:
    case WSF_TEXT:
    case WSF_BINARY:
    case WSF_CLOSE:
    case WSF_PING:
    case WSF_PONG:
        break;
    default:
        return WSF_BAD_FRAME;
    }
    f->masked = (p[1] & 0x80) != 0;
    uint64_t l = p[1] & 0x7f;
    size_t h = 2;
    if (l == 126) {
        if (n < 4) return WSF_NEED_MORE;
        l = (uint64_t)p[2] << 8 | p[3];
        h = 4;
    } else if (l == 127) {
        if (n < 10) return WSF_NEED_MORE;
        l = 0;
        for (int i = 0; i < 8; i++)
            l = l << 8 | p[2 + i];
        if (l >> 63) return WSF_BAD_FRAME;
        h = 10;
    }
    if (f->opcode >= 0x8 && (l > 125 || !f->fin)) return WSF_BAD_FRAME;
    if (f->masked) {
        if (n < h + 4) return WSF_NEED_MORE;
        memcpy(f->mask, p + h, 4);
        h += 4;
    }
    f->len = l;
    f->header_len = h;
    return WSF_HEADER;
}

void wsf_mask(uint8_t *p, size_t n, const uint8_t mask[4], uint64_t offset)
{
    for (size_t i = 0; i < n; i++)
        p[i] ^= mask[(offset + i) & 3];
}

size_t wsf_write_header(uint8_t *out, bool fin, int opcode, uint64_t len, const uint8_t *mask)
{
    size_t h = 0;
    out[h++] = (uint8_t)((fin ? 0x80 : 0) | (opcode & 0x0f));
    uint8_t m = mask ? 0x80 : 0;
    if (len < 126) {
        out[h++] = (uint8_t)(m | len);
    } else if (len <= 0xffff) {
        out[h++] = m | 126;
        out[h++] = (uint8_t)(len >> 8);
        out[h++] = (uint8_t)len;
    } else {
        out[h++] = m | 127;
        for (int i = 7; i >= 0; i--)
            out[h++] = (uint8_t)(len >> (8 * i));
    }
    if (mask) {
        memcpy(out + h, mask, 4);
        h += 4;
    }
    return h;
}

size_t wsf_close_payload(uint8_t out[125], int code, const char *reason)
{
    out[0] = (uint8_t)(code >> 8);
    out[1] = (uint8_t)code;
    size_t n = reason ? strlen(reason) : 0;
    if (n > 123) n = 123;
    if (n) memcpy(out + 2, reason, n);
    return 2 + n;
}

int wsf_close_code(const uint8_t *p, size_t n)
{
    if (n == 0) return WSF_CLOSE_NO_STATUS;
    if (n == 1) return -1;
    int code = p[0] << 8 | p[1];
    if (code < 1000 || code >= 5000) return -1;
    if (code == 1004 || code == 1005 || code == 1006 || code == 1015) return -1;
    if (code > 1015 && code < 3000) return -1;
    return code;
}
