/* aes.c: see aes.h. The S-boxes are computed once from their definition
 * (the multiplicative inverse in GF(2^8), then the affine map), so no table
 * is typed in by hand. */
#include "libcommon/aes.h"

#include <pthread.h>
#include <string.h>

static uint8_t sbox[256], inv_sbox[256];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static uint8_t _rotl8(uint8_t x, int n)
{
    return (uint8_t)((x << n) | (x >> (8 - n)));
}

static void _tables(void)
{
    uint8_t p = 1, q = 1;
    do { /* p runs over the multiplicative group by powers of 3, q = 1/p */
        p = (uint8_t)(p ^ (p << 1) ^ ((p & 0x80) ? 0x1B : 0));
        q ^= (uint8_t)(q << 1);
        q ^= (uint8_t)(q << 2);
        q ^= (uint8_t)(q << 4);
        if (q & 0x80) q ^= 0x09;
        sbox[p] = (uint8_t)(q ^ _rotl8(q, 1) ^ _rotl8(q, 2) ^ _rotl8(q, 3) ^ _rotl8(q, 4) ^ 0x63);
    } while (p != 1);
    sbox[0] = 0x63;
    for (int i = 0; i < 256; i++)
        inv_sbox[sbox[i]] = (uint8_t)i;
}

static uint8_t _mul(uint8_t a, uint8_t b)
{
    uint8_t r = 0;
    while (b) {
        if (b & 1) r ^= a;
        a = (uint8_t)((a << 1) ^ ((a & 0x80) ? 0x1B : 0));
        b >>= 1;
    }
    return r;
}

void aes256_key_init(aes256_key *k, const uint8_t key[32])
{
    pthread_once(&tables_once, _tables);
    memcpy(k->rk, key, 32);
    uint8_t rcon = 1;
    for (int i = 8; i < 60; i++) {
        uint8_t t[4];
        memcpy(t, k->rk + 4 * (i - 1), 4);
        if (i % 8 == 0) {
            uint8_t first = t[0];
            t[0] = (uint8_t)(sbox[t[1]] ^ rcon);
            t[1] = sbox[t[2]];
            t[2] = sbox[t[3]];
            t[3] = sbox[first];
            rcon = _mul(rcon, 2);
        } else if (i % 8 == 4) {
            for (int j = 0; j < 4; j++)
                t[j] = sbox[t[j]];
        }
        for (int j = 0; j < 4; j++)
            k->rk[4 * i + j] = (uint8_t)(k->rk[4 * (i - 8) + j] ^ t[j]);
    }
}

static void _add_round_key(uint8_t s[16], const aes256_key *k, int round)
{
    for (int i = 0; i < 16; i++)
        s[i] ^= k->rk[16 * round + i];
}

/* InvShiftRows then InvSubBytes; the state is column-major (s[row + 4 col]). */
static void _inv_shift_sub(uint8_t s[16])
{
    uint8_t t[16];
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++)
            t[r + 4 * ((c + r) % 4)] = s[r + 4 * c];
    for (int i = 0; i < 16; i++)
        s[i] = inv_sbox[t[i]];
}

static void _inv_mix_columns(uint8_t s[16])
{
    for (int c = 0; c < 4; c++) {
        uint8_t *a = s + 4 * c, b0 = a[0], b1 = a[1], b2 = a[2], b3 = a[3];
        a[0] = (uint8_t)(_mul(b0, 14) ^ _mul(b1, 11) ^ _mul(b2, 13) ^ _mul(b3, 9));
        a[1] = (uint8_t)(_mul(b0, 9) ^ _mul(b1, 14) ^ _mul(b2, 11) ^ _mul(b3, 13));
        a[2] = (uint8_t)(_mul(b0, 13) ^ _mul(b1, 9) ^ _mul(b2, 14) ^ _mul(b3, 11));
        a[3] = (uint8_t)(_mul(b0, 11) ^ _mul(b1, 13) ^ _mul(b2, 9) ^ _mul(b3, 14));
    }
}

void aes256_decrypt_block(const aes256_key *k, const uint8_t in[16], uint8_t out[16])
{
    uint8_t s[16];
    memcpy(s, in, 16);
    _add_round_key(s, k, 14);
    for (int round = 13; round >= 1; round--) {
        _inv_shift_sub(s);
        _add_round_key(s, k, round);
        _inv_mix_columns(s);
    }
    _inv_shift_sub(s);
    _add_round_key(s, k, 0);
    memcpy(out, s, 16);
}

bool aes256_cbc_decrypt(const uint8_t key[32], const uint8_t iv[16], uint8_t *buf, size_t len,
                        size_t *out_len)
{
    *out_len = 0;
    if (len == 0 || len % 16 != 0) return false;
    aes256_key k;
    aes256_key_init(&k, key);
    uint8_t prev[16], cur[16];
    memcpy(prev, iv, 16);
    for (size_t off = 0; off < len; off += 16) {
        memcpy(cur, buf + off, 16);
        aes256_decrypt_block(&k, cur, buf + off);
        for (int i = 0; i < 16; i++)
            buf[off + i] ^= prev[i];
        memcpy(prev, cur, 16);
    }
    uint8_t pad = buf[len - 1];
    if (pad == 0 || pad > 16) return false;
    for (size_t i = len - pad; i < len; i++)
        if (buf[i] != pad) return false;
    *out_len = len - pad;
    return true;
}
