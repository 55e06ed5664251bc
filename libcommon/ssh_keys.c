/* ssh_keys.c: OpenSSH key formats (see ssh_keys.h). The wire encoding is
 * RFC 4251's (uint32 big-endian lengths before strings); the private key
 * container is OpenSSH's PROTOCOL.key ("openssh-key-v1"). */
#include "libcommon/ssh_keys.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define KEY_TYPE "ssh-ed25519"
#define MAGIC "openssh-key-v1" /* followed by its NUL */
#define PEM_BEGIN "-----BEGIN OPENSSH PRIVATE KEY-----"
#define PEM_END "-----END OPENSSH PRIVATE KEY-----"
#define PEM_WIDTH 70

/* ---- writing ------------------------------------------------------------- */

typedef struct wbuf {
    unsigned char *p;
    size_t len, cap;
} wbuf;

static void _put(wbuf *b, const void *data, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        unsigned char *np = ts_malloc(cap);
        if (b->len) memcpy(np, b->p, b->len);
        sodium_memzero(b->p, b->cap);
        free(b->p);
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void _put_u32(wbuf *b, uint32_t v)
{
    unsigned char be[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                           (unsigned char)(v >> 8), (unsigned char)v};
    _put(b, be, 4);
}

static void _put_str(wbuf *b, const void *data, size_t n)
{
    _put_u32(b, (uint32_t)n);
    _put(b, data, n);
}

static void _wipe(wbuf *b)
{
    if (b->p) sodium_memzero(b->p, b->cap);
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

static char *_base64(const unsigned char *data, size_t n)
{
    size_t cap = sodium_base64_encoded_len(n, sodium_base64_VARIANT_ORIGINAL);
    char *out = ts_malloc(cap);
    sodium_bin2base64(out, cap, data, n, sodium_base64_VARIANT_ORIGINAL);
    return out;
}

/* The public key blob: string "ssh-ed25519", string pk. */
static void _pub_blob(wbuf *b, const unsigned char pk[crypto_sign_PUBLICKEYBYTES])
{
    _put_str(b, KEY_TYPE, strlen(KEY_TYPE));
    _put_str(b, pk, crypto_sign_PUBLICKEYBYTES);
}

static char *_pem(const unsigned char *data, size_t n)
{
    char *b64 = _base64(data, n);
    size_t len = strlen(b64);
    wbuf out = {0};
    _put(&out, PEM_BEGIN "\n", strlen(PEM_BEGIN) + 1);
    for (size_t i = 0; i < len; i += PEM_WIDTH) {
        size_t k = len - i < PEM_WIDTH ? len - i : PEM_WIDTH;
        _put(&out, b64 + i, k);
        _put(&out, "\n", 1);
    }
    _put(&out, PEM_END "\n", strlen(PEM_END) + 2); /* with the NUL */
    sodium_memzero(b64, len);
    free(b64);
    return (char *)out.p;
}

bool ssh_keys_generate(const char *comment, char **pub, char **priv, ts_err *err)
{
    *pub = *priv = NULL;
    if (sodium_init() < 0) {
        ts_err_set(err, "libsodium could not be initialised");
        return false;
    }
    if (!comment) comment = "";
    unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
    crypto_sign_keypair(pk, sk); /* sk is seed || pk: OpenSSH's 64-byte form */

    wbuf blob = {0};
    _pub_blob(&blob, pk);
    char *b64 = _base64(blob.p, blob.len);
    *pub = ts_asprintf(KEY_TYPE " %s%s%s\n", b64, *comment ? " " : "", comment);
    free(b64);

    wbuf sec = {0};
    uint32_t check = randombytes_random();
    _put_u32(&sec, check);
    _put_u32(&sec, check);
    _put_str(&sec, KEY_TYPE, strlen(KEY_TYPE));
    _put_str(&sec, pk, sizeof(pk));
    _put_str(&sec, sk, sizeof(sk));
    _put_str(&sec, comment, strlen(comment));
    for (unsigned char pad = 1; sec.len % 8; pad++) /* the cipher "none" has blocks of 8 */
        _put(&sec, &pad, 1);

    wbuf all = {0};
    _put(&all, MAGIC, sizeof(MAGIC)); /* with its NUL */
    _put_str(&all, "none", 4);        /* cipher */
    _put_str(&all, "none", 4);        /* kdf */
    _put_str(&all, "", 0);            /* kdf options */
    _put_u32(&all, 1);                /* one key */
    _put_str(&all, blob.p, blob.len);
    _put_str(&all, sec.p, sec.len);
    *priv = _pem(all.p, all.len);

    sodium_memzero(sk, sizeof(sk));
    _wipe(&blob);
    _wipe(&sec);
    _wipe(&all);
    return true;
}

/* ---- reading ------------------------------------------------------------- */

typedef struct rbuf {
    const unsigned char *p;
    size_t len, off;
} rbuf;

static bool _get_u32(rbuf *b, uint32_t *v)
{
    if (b->len - b->off < 4) return false;
    const unsigned char *q = b->p + b->off;
    *v = (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3];
    b->off += 4;
    return true;
}

static bool _get_str(rbuf *b, const unsigned char **s, size_t *n)
{
    uint32_t len;
    if (!_get_u32(b, &len) || b->len - b->off < len) return false;
    *s = b->p + b->off;
    *n = len;
    b->off += len;
    return true;
}

static bool _str_is(const unsigned char *s, size_t n, const char *want)
{
    return n == strlen(want) && memcmp(s, want, n) == 0;
}

/* Decode base64 text (whitespace between characters allowed) into a heap
 * buffer; NULL when it is not base64. */
static unsigned char *_unbase64(const char *text, size_t len, size_t *out_len)
{
    unsigned char *out = ts_malloc(len + 1);
    if (sodium_base642bin(out, len + 1, text, len, " \t\r\n", out_len, NULL,
                          sodium_base64_VARIANT_ORIGINAL) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

/* The blob of "<type> <base64> [comment]". */
static unsigned char *_parse_pub(const char *pub, size_t *n, ts_err *err)
{
    const char *sp = strchr(pub, ' ');
    if (!sp || sp == pub) {
        ts_err_set(err, "the public key is not an OpenSSH line \"<type> <base64> [comment]\"");
        return NULL;
    }
    const char *b64 = sp + 1;
    size_t len = strcspn(b64, " \t\r\n");
    unsigned char *blob = len ? _unbase64(b64, len, n) : NULL;
    rbuf r = {blob, blob ? *n : 0, 0};
    const unsigned char *type;
    size_t tlen;
    if (!blob || !_get_str(&r, &type, &tlen) || tlen != (size_t)(sp - pub) ||
        memcmp(type, pub, tlen) != 0) {
        ts_err_set(err, "the public key's base64 is not a %.*s key", (int)(sp - pub), pub);
        free(blob);
        return NULL;
    }
    return blob;
}

/* The decoded openssh-key-v1 container of a PEM block. */
static unsigned char *_parse_pem(const char *priv, size_t *n, ts_err *err)
{
    const char *begin = strstr(priv, PEM_BEGIN);
    const char *end = begin ? strstr(begin, PEM_END) : NULL;
    if (!begin || !end) {
        ts_err_set(err, "the private key is not in OpenSSH's format (" PEM_BEGIN ")");
        return NULL;
    }
    begin += strlen(PEM_BEGIN);
    unsigned char *data = _unbase64(begin, (size_t)(end - begin), n);
    if (!data || *n < sizeof(MAGIC) || memcmp(data, MAGIC, sizeof(MAGIC)) != 0) {
        ts_err_set(err, "the private key is not an openssh-key-v1 key");
        free(data);
        return NULL;
    }
    return data;
}

/* The ed25519 private section: the secret key must derive pk. */
static bool _check_ed25519(rbuf *sec, const unsigned char *pub_blob, size_t pub_n, ts_err *err)
{
    rbuf pb = {pub_blob, pub_n, 0};
    const unsigned char *type, *pk, *spk, *sk;
    size_t tn, pkn, spkn, skn;
    uint32_t c1, c2;
    bool ok = _get_str(&pb, &type, &tn) && _get_str(&pb, &pk, &pkn) &&
              pkn == crypto_sign_PUBLICKEYBYTES && _get_u32(sec, &c1) && _get_u32(sec, &c2) &&
              c1 == c2 && _get_str(sec, &type, &tn) && _str_is(type, tn, KEY_TYPE) &&
              _get_str(sec, &spk, &spkn) && _get_str(sec, &sk, &skn) &&
              skn == crypto_sign_SECRETKEYBYTES && spkn == pkn;
    if (!ok) {
        ts_err_set(err, "the private key's ed25519 section is malformed");
        return false;
    }
    unsigned char derived[crypto_sign_PUBLICKEYBYTES];
    crypto_sign_ed25519_sk_to_pk(derived, sk);
    if (memcmp(derived, pk, pkn) != 0 || memcmp(spk, pk, pkn) != 0) {
        ts_err_set(err, "the private key does not belong to the public key");
        return false;
    }
    return true;
}

bool ssh_keys_check_pair(const char *pub, const char *priv, ts_err *err)
{
    if (sodium_init() < 0) {
        ts_err_set(err, "libsodium could not be initialised");
        return false;
    }
    size_t pub_n = 0, all_n = 0;
    unsigned char *pub_blob = _parse_pub(pub, &pub_n, err);
    if (!pub_blob) return false;
    unsigned char *all = _parse_pem(priv, &all_n, err);
    if (!all) {
        free(pub_blob);
        return false;
    }
    rbuf r = {all, all_n, sizeof(MAGIC)};
    const unsigned char *cipher, *kdf, *kdfopt, *blob, *sec;
    size_t cn, kn, kon, bn, sn;
    uint32_t nkeys;
    bool ok = false;
    if (!_get_str(&r, &cipher, &cn) || !_get_str(&r, &kdf, &kn) || !_get_str(&r, &kdfopt, &kon) ||
        !_get_u32(&r, &nkeys) || !_get_str(&r, &blob, &bn) || !_get_str(&r, &sec, &sn)) {
        ts_err_set(err, "the private key is truncated");
    } else if (!_str_is(cipher, cn, "none") || !_str_is(kdf, kn, "none")) {
        ts_err_set(err, "the private key is encrypted (upload it without a passphrase)");
    } else if (nkeys != 1) {
        ts_err_set(err, "the private key file holds %u keys (one expected)", nkeys);
    } else if (bn != pub_n || memcmp(blob, pub_blob, bn) != 0) {
        ts_err_set(err, "the private key does not belong to the public key");
    } else if (strncmp(pub, KEY_TYPE " ", strlen(KEY_TYPE) + 1) == 0) {
        rbuf s = {sec, sn, 0};
        ok = _check_ed25519(&s, pub_blob, pub_n, err);
    } else {
        ok = true; /* other types: the public part the file carries matches */
    }
    sodium_memzero(all, all_n);
    free(all);
    free(pub_blob);
    return ok;
}
