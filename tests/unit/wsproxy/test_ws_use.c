/* test_ws_use.c: services/wsproxy/ws_use.c, which client bytes on a
 * WebSocket tunnel count as use of the session: data frames (text, binary,
 * continuation, compressed ones too) do, pings, pongs and closes do not,
 * however the bytes are cut into reads; bytes that are no frames count. */
#include "services/wsproxy/ws_use.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

/* One masked client frame of len payload bytes into out; its size. */
static size_t frame(uint8_t *out, int opcode, bool fin, size_t len)
{
    static const uint8_t mask[4] = {1, 2, 3, 4};
    size_t h = wsf_write_header(out, fin, opcode, len, mask);
    memset(out + h, 'x', len);
    return h + len;
}

static void test_control_frames_are_not_use(void **state)
{
    (void)state;
    uint8_t buf[512];
    size_t n = frame(buf, WSF_PONG, true, 4);
    n += frame(buf + n, WSF_PING, true, 125);
    n += frame(buf + n, WSF_PONG, true, 0);
    ws_use u;
    ws_use_init(&u);
    assert_false(ws_use_feed(&u, buf, n));
    /* a close too */
    n = frame(buf, WSF_CLOSE, true, 2);
    assert_false(ws_use_feed(&u, buf, n));
}

static void test_data_frames_are_use(void **state)
{
    (void)state;
    uint8_t buf[512];
    ws_use u;
    ws_use_init(&u);
    size_t n = frame(buf, WSF_PONG, true, 3);
    size_t m = frame(buf + n, WSF_TEXT, true, 5);
    assert_true(ws_use_feed(&u, buf, n + m));
    /* binary, an empty text, a continuation */
    n = frame(buf, WSF_BINARY, false, 10);
    assert_true(ws_use_feed(&u, buf, n));
    n = frame(buf, WSF_CONT, true, 1);
    assert_true(ws_use_feed(&u, buf, n));
    n = frame(buf, WSF_TEXT, true, 0);
    assert_true(ws_use_feed(&u, buf, n));
    /* permessage-deflate's RSV1 on a data frame changes nothing */
    n = frame(buf, WSF_BINARY, true, 8);
    buf[0] |= 0x40;
    assert_true(ws_use_feed(&u, buf, n));
    n = frame(buf, WSF_PING, true, 8);
    assert_false(ws_use_feed(&u, buf, n));
}

static void test_cut_anywhere(void **state)
{
    (void)state;
    /* a ping, a 70000-byte binary frame (64-bit length), a pong: fed one
     * byte at a time, only the binary frame's bytes count */
    size_t cap = 80000;
    uint8_t *buf = malloc(cap);
    size_t a = frame(buf, WSF_PING, true, 20);
    size_t b = frame(buf + a, WSF_BINARY, true, 70000);
    size_t c = frame(buf + a + b, WSF_PONG, true, 20);
    ws_use u;
    ws_use_init(&u);
    for (size_t i = 0; i < a + b + c; i++) {
        bool used = ws_use_feed(&u, buf + i, 1);
        /* the header's bytes count once the header is whole (its last byte) */
        bool in_binary = i >= a + b - 70000 - 1 && i < a + b;
        assert_int_equal(used, in_binary);
    }
    /* the same in reads of 1000 */
    ws_use_init(&u);
    int counted = 0;
    for (size_t i = 0; i < a + b + c; i += 1000) {
        size_t k = a + b + c - i < 1000 ? a + b + c - i : 1000;
        counted += ws_use_feed(&u, buf + i, k);
    }
    assert_int_equal(counted, 71); /* every read that holds binary bytes */
    free(buf);
}

static void test_not_frames_count(void **state)
{
    (void)state;
    ws_use u;
    ws_use_init(&u);
    const uint8_t junk[] = {0x83, 0x80, 0, 0, 0, 0}; /* opcode 3: reserved */
    assert_true(ws_use_feed(&u, junk, sizeof(junk)));
    uint8_t buf[64];
    size_t n = frame(buf, WSF_PING, true, 1);
    assert_true(ws_use_feed(&u, buf, n)); /* off for the connection */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_control_frames_are_not_use),
        cmocka_unit_test(test_data_frames_are_use),
        cmocka_unit_test(test_cut_anywhere),
        cmocka_unit_test(test_not_frames_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
