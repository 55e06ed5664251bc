/* aes.h: AES-256 decryption (FIPS-197) in CBC mode with PKCS#7 padding.
 *
 * Only what reading Backend.AI's encoded request bodies needs (the
 * gateway's web_payload.h): their key is derived from the public endpoint
 * address, so this is de-obfuscation, not a secret's protection, and the
 * table-driven code is not hardened against timing. Do not use it to keep
 * anything secret; libsodium is the project's cryptography. */
#ifndef TESSERA_AES_H
#define TESSERA_AES_H

#include "libcommon/common.h"

#include <stddef.h>
#include <stdint.h>

typedef struct aes256_key {
    uint8_t rk[240]; /* the 15 round keys */
} aes256_key;

void aes256_key_init(aes256_key *k, const uint8_t key[32]);
/* One block, out may be in. */
void aes256_decrypt_block(const aes256_key *k, const uint8_t in[16], uint8_t out[16]);
/* Decrypt buf (len bytes, a positive multiple of 16) in place with AES-256
 * in CBC mode, then take off PKCS#7 padding: *out_len bytes of plain text
 * remain. False (buf then holds garbage) when len is not such a multiple
 * or the padding is not valid (the wrong key, most likely). */
bool aes256_cbc_decrypt(const uint8_t key[32], const uint8_t iv[16], uint8_t *buf, size_t len,
                        size_t *out_len) TS_MUST_CHECK;

#endif
