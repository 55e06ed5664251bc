/* web_payload.c: see web_payload.h. */
#include "web_payload.h"

#include "libcommon/aes.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define IV_LEN 16
#define HOST_MAX 256

bool web_payload_encoded(const http_req *req)
{
    const char *v = http_header(req, "X-BackendAI-Encoded");
    return v && strcasecmp(v, "true") == 0;
}

/* key = (base64(endpoint) + iv + iv)[:32] */
static void _key(const char *endpoint, const uint8_t *iv, uint8_t key[32])
{
    size_t n = strlen(endpoint);
    size_t b64_len = sodium_base64_encoded_len(n, sodium_base64_VARIANT_ORIGINAL);
    char *b64 = ts_malloc(b64_len + 2 * IV_LEN);
    sodium_bin2base64(b64, b64_len, (const unsigned char *)endpoint, n,
                      sodium_base64_VARIANT_ORIGINAL);
    size_t used = strlen(b64);
    memcpy(b64 + used, iv, IV_LEN);
    memcpy(b64 + used + IV_LEN, iv, IV_LEN);
    memcpy(key, b64, 32); /* used + 32 >= 32 */
    sodium_memzero(b64, b64_len + 2 * IV_LEN);
    free(b64);
}

/* The JSON object of ct decoded with endpoint's key, or NULL. */
static json_t *_try(const char *endpoint, const uint8_t *iv, const uint8_t *ct, size_t len)
{
    uint8_t key[32];
    _key(endpoint, iv, key);
    uint8_t *buf = ts_malloc(len ? len : 1);
    memcpy(buf, ct, len);
    size_t n = 0;
    json_t *out = NULL;
    if (aes256_cbc_decrypt(key, iv, buf, len, &n)) {
        out = json_loadb((const char *)buf, n, 0, NULL);
        if (out && !json_is_object(out)) {
            json_decref(out);
            out = NULL;
        }
    }
    sodium_memzero(buf, len);
    sodium_memzero(key, sizeof(key));
    free(buf);
    return out;
}

json_t *web_payload_decode(const http_req *req, http_resp *resp)
{
    const char *body = req->body;
    size_t len = req->body_len;
    const char *colon = body ? memchr(body, ':', len) : NULL;
    const char *host = http_header(req, "Host");
    if (!colon || colon - body != IV_LEN || !host || !*host || strlen(host) > HOST_MAX) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "an encoded body (X-BackendAI-Encoded) is <16-character iv>:<base64>");
        return NULL;
    }
    size_t b64_len = len - IV_LEN - 1, ct_len = 0;
    uint8_t *ct = ts_malloc(b64_len + 1);
    if (sodium_base642bin(ct, b64_len + 1, colon + 1, b64_len, "\r\n", &ct_len, NULL,
                          sodium_base64_VARIANT_ORIGINAL) != 0) {
        free(ct);
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "an encoded body (X-BackendAI-Encoded) is <16-character iv>:<base64>");
        return NULL;
    }
    static const char *const schemes[] = {"http", "https"};
    static const char *const tails[] = {"", "/"};
    json_t *out = NULL;
    for (size_t s = 0; s < TS_ARRAY_LEN(schemes) && !out; s++)
        for (size_t t = 0; t < TS_ARRAY_LEN(tails) && !out; t++) {
            char *endpoint = ts_asprintf("%s://%s%s", schemes[s], host, tails[t]);
            out = _try(endpoint, (const uint8_t *)body, ct, ct_len);
            free(endpoint);
        }
    sodium_memzero(ct, b64_len + 1);
    free(ct);
    if (!out)
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "the encoded body does not decode with this endpoint's key (http(s)://%s)",
                     host);
    return out;
}

json_t *web_payload_json(http_req *req, http_resp *resp)
{
    return web_payload_encoded(req) ? web_payload_decode(req, resp) : http_json_body(req, resp);
}
