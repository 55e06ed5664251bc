/* test_aes.c: aes.c, AES-256 decryption: FIPS-197's example vector, CBC with
 * PKCS#7 padding as Backend.AI's Python client encodes a login (a vector
 * made with pycryptodome), and the refusals (length, padding). */
#include "libcommon/aes.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

static void unhex(const char *hex, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
}

static void test_fips197_block(void **state)
{
    (void)state;
    uint8_t key[32], in[16], out[16], want[16];
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)i;
    unhex("8ea2b7ca516745bfeafc49904b496089", in, 16);
    unhex("00112233445566778899aabbccddeeff", want, 16);
    aes256_key k;
    aes256_key_init(&k, key);
    aes256_decrypt_block(&k, in, out);
    assert_memory_equal(out, want, 16);
}

/* Python: key = (b64("http://127.0.0.1:8090") + iv + iv)[:32], iv = b"abcdefghijklmnop" */
static const char CT[] = "546ac550bb35a6eff1da5266a834e6c31813b8b25758c7a5fcc29a432de05d6f"
                         "9306d8cced40a706ac584f6be1d667ca";
static const char PLAIN[] = "{\"username\": \"u@example.com\", \"password\": \"p\"}";

static void test_cbc_pkcs7(void **state)
{
    (void)state;
    const uint8_t *key = (const uint8_t *)"aHR0cDovLzEyNy4wLjAuMTo4MDkwabcd";
    const uint8_t *iv = (const uint8_t *)"abcdefghijklmnop";
    uint8_t buf[48];
    unhex(CT, buf, sizeof(buf));
    size_t n = 0;
    assert_true(aes256_cbc_decrypt(key, iv, buf, sizeof(buf), &n));
    assert_int_equal(n, strlen(PLAIN));
    assert_memory_equal(buf, PLAIN, n);
}

static void test_refusals(void **state)
{
    (void)state;
    const uint8_t *key = (const uint8_t *)"aHR0cDovLzEyNy4wLjAuMTo4MDkwabcd";
    const uint8_t *iv = (const uint8_t *)"abcdefghijklmnop";
    uint8_t buf[48];
    size_t n = 7;
    unhex(CT, buf, sizeof(buf));
    assert_false(aes256_cbc_decrypt(key, iv, buf, 0, &n));
    assert_int_equal(n, 0);
    assert_false(aes256_cbc_decrypt(key, iv, buf, 47, &n));
    /* another key (https:// instead of http://): the padding does not check out */
    unhex(CT, buf, sizeof(buf));
    assert_false(aes256_cbc_decrypt((const uint8_t *)"aHR0cHM6Ly8xMjcuMC4wLjE6ODA5MGFi", iv, buf,
                                    sizeof(buf), &n));
    /* a flipped byte in the last block breaks the padding */
    unhex(CT, buf, sizeof(buf));
    buf[47] ^= 0x01;
    assert_false(aes256_cbc_decrypt(key, iv, buf, sizeof(buf), &n));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fips197_block),
        cmocka_unit_test(test_cbc_pkcs7),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
