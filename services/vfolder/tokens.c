/* tokens.c: signed transfer tokens (tokens.h). */
#include "tokens.h"

#include <jansson.h>
#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define B64 sodium_base64_VARIANT_URLSAFE_NO_PADDING
#define MAX_TOKEN 8192

static char *g_secret;
static pthread_rwlock_t g_mu = PTHREAD_RWLOCK_INITIALIZER;

void vf_token_set_secret(const char *secret)
{
    pthread_rwlock_wrlock(&g_mu);
    free(g_secret);
    g_secret = secret ? ts_strdup(secret) : NULL;
    pthread_rwlock_unlock(&g_mu);
}

bool vf_token_has_secret(void)
{
    pthread_rwlock_rdlock(&g_mu);
    bool ok = g_secret && strlen(g_secret) >= VF_TOKEN_SECRET_MIN;
    pthread_rwlock_unlock(&g_mu);
    return ok;
}

char *vf_token_new_secret(void)
{
    if (sodium_init() < 0) ts_panic("sodium_init failed");
    unsigned char raw[48];
    randombytes_buf(raw, sizeof(raw));
    char *out = ts_malloc(sodium_base64_ENCODED_LEN(sizeof(raw), B64));
    sodium_bin2base64(out, sodium_base64_ENCODED_LEN(sizeof(raw), B64), raw, sizeof(raw), B64);
    return out;
}

static void _mac(const char *data, size_t len, unsigned char out[crypto_auth_hmacsha256_BYTES])
{
    pthread_rwlock_rdlock(&g_mu);
    if (!g_secret) ts_panic("transfer token used before its secret was loaded");
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, (const unsigned char *)g_secret, strlen(g_secret));
    pthread_rwlock_unlock(&g_mu);
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)data, len);
    crypto_auth_hmacsha256_final(&st, out);
}

static const char *_op_name(vf_token_op op)
{
    return op == VF_TOKEN_UPLOAD ? "upload" : "download";
}

char *vf_token_sign(const vf_token *t)
{
    json_t *p = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:b}", "v", 1, "op",
                          _op_name(t->op), "fid", t->fid, "host", t->host, "uid", t->uid, "id",
                          t->id, "path", t->path ? t->path : "", "size", (json_int_t)t->size, "exp",
                          (json_int_t)t->exp, "archive", t->archive);
    if (!p) ts_panic("transfer token payload could not be built (path not UTF-8?)");
    char *text = json_dumps(p, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(p);
    size_t tlen = strlen(text);
    size_t b64len = sodium_base64_ENCODED_LEN(tlen, B64);
    size_t maclen = sodium_base64_ENCODED_LEN(crypto_auth_hmacsha256_BYTES, B64);
    char *out = ts_malloc(b64len + maclen + 1);
    sodium_bin2base64(out, b64len, (const unsigned char *)text, tlen, B64);
    free(text);
    size_t head = strlen(out);
    unsigned char mac[crypto_auth_hmacsha256_BYTES];
    _mac(out, head, mac);
    out[head] = '.';
    sodium_bin2base64(out + head + 1, maclen, mac, sizeof(mac), B64);
    return out;
}

static bool _copy_uuid(json_t *p, const char *key, char out[TS_UUID_STRLEN])
{
    const char *v = json_string_value(json_object_get(p, key));
    if (!v || strlen(v) >= TS_UUID_STRLEN) return false;
    ts_strlcpy(out, v, TS_UUID_STRLEN);
    return true;
}

vf_token_rc vf_token_verify(const char *text, int64_t now, vf_token *out)
{
    memset(out, 0, sizeof(*out));
    if (!text || strlen(text) > MAX_TOKEN || !vf_token_has_secret()) return VF_TOKEN_MALFORMED;
    const char *dot = strchr(text, '.');
    if (!dot || dot == text) return VF_TOKEN_MALFORMED;
    unsigned char mac[crypto_auth_hmacsha256_BYTES], want[crypto_auth_hmacsha256_BYTES];
    size_t maclen = 0;
    const char *end = NULL;
    if (sodium_base642bin(mac, sizeof(mac), dot + 1, strlen(dot + 1), NULL, &maclen, &end, B64) !=
            0 ||
        maclen != sizeof(mac) || (end && *end))
        return VF_TOKEN_MALFORMED;
    _mac(text, (size_t)(dot - text), want);
    if (sodium_memcmp(mac, want, sizeof(mac)) != 0) return VF_TOKEN_MALFORMED;

    size_t cap = (size_t)(dot - text);
    unsigned char *raw = ts_malloc(cap + 1);
    size_t rawlen = 0;
    if (sodium_base642bin(raw, cap, text, (size_t)(dot - text), NULL, &rawlen, NULL, B64) != 0) {
        free(raw);
        return VF_TOKEN_MALFORMED;
    }
    json_t *p = json_loadb((const char *)raw, rawlen, 0, NULL);
    free(raw);
    const char *op = json_string_value(json_object_get(p, "op"));
    const char *path = json_string_value(json_object_get(p, "path"));
    json_t *size = json_object_get(p, "size"), *exp = json_object_get(p, "exp");
    vf_token_rc rc = VF_TOKEN_MALFORMED;
    if (json_integer_value(json_object_get(p, "v")) == 1 && op && path && json_is_integer(size) &&
        json_is_integer(exp) && _copy_uuid(p, "fid", out->fid) && _copy_uuid(p, "uid", out->uid) &&
        _copy_uuid(p, "id", out->id) && (!strcmp(op, "upload") || !strcmp(op, "download"))) {
        out->op = strcmp(op, "upload") == 0 ? VF_TOKEN_UPLOAD : VF_TOKEN_DOWNLOAD;
        out->path = ts_strdup(path);
        out->size = json_integer_value(size);
        out->exp = json_integer_value(exp);
        out->archive = json_is_true(json_object_get(p, "archive"));
        ts_strlcpy(out->host, json_string_value(json_object_get(p, "host")) ?: "",
                   sizeof(out->host));
        rc = out->exp < now ? VF_TOKEN_EXPIRED : VF_TOKEN_OK;
    }
    json_decref(p);
    if (rc != VF_TOKEN_OK) vf_token_free(out);
    return rc;
}

void vf_token_free(vf_token *t)
{
    free(t->path);
    t->path = NULL;
}
