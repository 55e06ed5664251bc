/* test_wsframe.c: libcommon/wsframe.c (shared by tessera-wsproxy, tessera-term and the gateway):
 * SHA-1 test vectors, base64, the RFC 6455 handshake key, frame headers and
 * masking. */
#include "libcommon/wsframe.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

static void hex(const uint8_t *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

static void sha1_is(const char *in, size_t n, const char *want)
{
    uint8_t d[20];
    char h[41];
    wsf_sha1(in, n, d);
    hex(d, 20, h);
    assert_string_equal(h, want);
}

static void test_sha1(void **state)
{
    (void)state;
    sha1_is("", 0, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    sha1_is("abc", 3, "a9993e364706816aba3e25717850c26c9cd0d89d");
    sha1_is("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    static char million[1000000];
    memset(million, 'a', sizeof(million));
    sha1_is(million, sizeof(million), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
    /* lengths around the padding boundary */
    char b[64];
    memset(b, 'x', sizeof(b));
    sha1_is(b, 55, "cef734ba81a024479e09eb5a75b6ddae62e6abf1");
    sha1_is(b, 64, "bb2fa3ee7afb9f54c6dfb5d021f14b1ffe40c163");
}

static void test_base64(void **state)
{
    (void)state;
    char out[16];
    assert_int_equal(wsf_base64((const uint8_t *)"", 0, out), 0);
    wsf_base64((const uint8_t *)"f", 1, out);
    assert_string_equal(out, "Zg==");
    wsf_base64((const uint8_t *)"fo", 2, out);
    assert_string_equal(out, "Zm8=");
    wsf_base64((const uint8_t *)"foobar", 6, out);
    assert_string_equal(out, "Zm9vYmFy");
    /* the standard alphabet's last two characters, not the URL-safe ones */
    assert_int_equal(wsf_base64((const uint8_t *)"\xfb\xff\xbf", 3, out), 4);
    assert_string_equal(out, "+/+/");
    /* a SHA-1 digest fills WSF_ACCEPT_LEN exactly */
    uint8_t d[20];
    memset(d, 0xff, sizeof(d));
    char acc[WSF_ACCEPT_LEN + 1];
    assert_int_equal(wsf_base64(d, sizeof(d), acc), WSF_ACCEPT_LEN);
    assert_string_equal(acc, "//////////////////////////8=");
}

/* What a Sec-WebSocket-Key may not be: anything but the padded base64 of
 * exactly 16 bytes in the standard alphabet. */
static void test_key_bad_input(void **state)
{
    (void)state;
    assert_true(wsf_key_valid("AAAAAAAAAAAAAAAAAAAAAA==", 24));
    assert_true(wsf_key_valid("+/+/+/+/+/+/+/+/+/+/+w==", 24));
    assert_false(wsf_key_valid("-_-_-_-_-_-_-_-_-_-_-w==", 24));     /* URL-safe alphabet */
    assert_false(wsf_key_valid("AAAAAAAAAAAAAAAAAAAAAAAA", 24));     /* 18 bytes, no padding */
    assert_false(wsf_key_valid("AAAAAAAAAAAAAAAAAAAAAAA=", 24));     /* 17 bytes */
    assert_false(wsf_key_valid("AAAAAAAAAAAAAAAAAAAAAA=A", 24));     /* padding inside */
    assert_false(wsf_key_valid("AAAAAAAAAAAAAAAAAAAA A==", 24));     /* a blank */
    assert_false(wsf_key_valid("AAAAAAAAAAAAAAAAAAAAAB==", 24));     /* stray low bits */
    assert_false(wsf_key_valid("AAAAAAAAAAAAAAAAAAAAAA==", 23));     /* cut short */
    assert_false(wsf_key_valid("AAAAAAAAAAAAAAAAAAAAAAAAAAAA", 28)); /* too long */
    char nul[25];
    memcpy(nul, "AAAAAAAAAAAAAAAAAAAAAA==", 25);
    nul[5] = '\0';
    assert_false(wsf_key_valid(nul, 24)); /* a NUL inside */
}

static void test_handshake_key(void **state)
{
    (void)state;
    char acc[WSF_ACCEPT_LEN + 1];
    /* RFC 6455 section 1.3 */
    wsf_accept("dGhlIHNhbXBsZSBub25jZQ==", 24, acc);
    assert_string_equal(acc, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    assert_true(wsf_key_valid("dGhlIHNhbXBsZSBub25jZQ==", 24));
    assert_false(wsf_key_valid("dGhlIHNhbXBsZSBub25jZQ=", 23));
    assert_false(wsf_key_valid("dGhlIHNhbXBsZSBub25jZR==", 24)); /* stray low bits */
    assert_false(wsf_key_valid("dGhlIHNhbXBsZSBub2!jZQ==", 24));
    assert_false(wsf_key_valid("", 0));
}

static void test_frames(void **state)
{
    (void)state;
    uint8_t buf[WSF_MAX_HEADER];
    wsf_frame f;
    const uint64_t lens[] = {0, 1, 125, 126, 65535, 65536, 1ULL << 32};
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        const uint8_t mask[4] = {1, 2, 3, 4};
        for (int masked = 0; masked < 2; masked++) {
            size_t h = wsf_write_header(buf, true, WSF_BINARY, lens[i], masked ? mask : NULL);
            for (size_t k = 0; k < h; k++)
                assert_int_equal(wsf_parse_header(buf, k, &f), WSF_NEED_MORE);
            assert_int_equal(wsf_parse_header(buf, h, &f), WSF_HEADER);
            assert_int_equal(f.header_len, h);
            assert_int_equal(f.len, lens[i]);
            assert_int_equal(f.opcode, WSF_BINARY);
            assert_true(f.fin);
            assert_int_equal(f.masked, masked);
            if (masked) assert_memory_equal(f.mask, mask, 4);
        }
    }
    /* RFC 6455 5.7: a masked "Hello" from a client */
    const uint8_t hello[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58};
    assert_int_equal(wsf_parse_header(hello, sizeof(hello), &f), WSF_HEADER);
    uint8_t payload[5];
    memcpy(payload, hello + f.header_len, 5);
    wsf_mask(payload, 2, f.mask, 0); /* in two pieces */
    wsf_mask(payload + 2, 3, f.mask, 2);
    assert_memory_equal(payload, "Hello", 5);
    /* protocol errors */
    const uint8_t rsv[] = {0xC1, 0x00};
    const uint8_t opcode[] = {0x83, 0x00};
    const uint8_t long_ping[] = {0x89, 126, 0, 200};
    const uint8_t frag_close[] = {0x08, 0x00};
    const uint8_t huge[] = {0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 1};
    assert_int_equal(wsf_parse_header(rsv, 2, &f), WSF_BAD_FRAME);
    assert_int_equal(wsf_parse_header(opcode, 2, &f), WSF_BAD_FRAME);
    assert_int_equal(wsf_parse_header(long_ping, 4, &f), WSF_BAD_FRAME);
    assert_int_equal(wsf_parse_header(frag_close, 2, &f), WSF_BAD_FRAME);
    assert_int_equal(wsf_parse_header(huge, 10, &f), WSF_BAD_FRAME);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha1),          cmocka_unit_test(test_base64),
        cmocka_unit_test(test_key_bad_input), cmocka_unit_test(test_handshake_key),
        cmocka_unit_test(test_frames),
    };
    return cmocka_run_group_tests_name("libcommon_wsframe", tests, NULL, NULL);
}
