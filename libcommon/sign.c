/* sign.c: Backend.AI request signatures (HMAC-SHA256 via libsodium). */
#include "libcommon/sign.h"

#include <ctype.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Versions before this one hash the body; later ones hash nothing. */
#define SIGN_EMPTY_BODY_SINCE "v4.20181215"

static void hmac(const void *key, size_t key_len, const void *msg, size_t msg_len,
                 unsigned char out[crypto_auth_hmacsha256_BYTES])
{
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, key, key_len);
    crypto_auth_hmacsha256_update(&st, msg, msg_len);
    crypto_auth_hmacsha256_final(&st, out);
}

static void hex(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

void sign_media_type(const char *content_type, char *out, size_t size)
{
    if (!size) return;
    const char *ct = content_type && *content_type ? content_type : "application/json";
    while (*ct == ' ' || *ct == '\t')
        ct++;
    size_t n = 0;
    while (ct[n] && ct[n] != ';')
        n++;
    while (n && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
        n--;
    if (n >= size) n = size - 1;
    for (size_t i = 0; i < n; i++)
        out[i] = (char)tolower((unsigned char)ct[i]);
    out[n] = '\0';
}

int sign_day(time_t date)
{
    struct tm tm;
    gmtime_r(&date, &tm);
    return (tm.tm_year + 1900) * 10000 + (tm.tm_mon + 1) * 100 + tm.tm_mday;
}

void sign_key_derive(const char *secret_key, time_t date, const char *host, sign_key *out)
{
    char day[16];
    snprintf(day, sizeof(day), "%08d", sign_day(date));
    unsigned char k1[crypto_auth_hmacsha256_BYTES], k2[crypto_auth_hmacsha256_BYTES];
    hmac(secret_key, strlen(secret_key), day, strlen(day), k1);
    hmac(k1, sizeof(k1), host, strlen(host), k2);
    crypto_auth_hmacsha256_init(&out->st, k2, sizeof(k2));
    sodium_memzero(k1, sizeof(k1));
    sodium_memzero(k2, sizeof(k2));
}

void sign_key_wipe(sign_key *key)
{
    sodium_memzero(key, sizeof(*key));
}

static void put(crypto_auth_hmacsha256_state *st, const char *s)
{
    crypto_auth_hmacsha256_update(st, (const unsigned char *)s, strlen(s));
}

void sign_compute_keyed(const sign_key *key, const sign_input *in, char hex_out[SIGN_HEX_LEN + 1])
{
    /* From v4.20181215 on the body is not signed: the last line is the hash
     * of nothing, a constant. */
    static const char empty_hex[] =
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    bool hash_body = in->version && strcmp(in->version, SIGN_EMPTY_BODY_SINCE) < 0;
    char body_hex[2 * crypto_hash_sha256_BYTES + 1];
    if (hash_body) {
        unsigned char body_hash[crypto_hash_sha256_BYTES];
        crypto_hash_sha256(body_hash, in->body, in->body_len);
        hex(body_hash, sizeof(body_hash), body_hex);
    } else {
        memcpy(body_hex, empty_hex, sizeof(empty_hex));
    }
    char media[128];
    sign_media_type(in->content_type, media, sizeof(media));

    /* string_to_sign, fed piece by piece (no copy of it is made). */
    crypto_auth_hmacsha256_state st = key->st;
    const char *parts[] = {in->method,
                           "\n",
                           in->target,
                           "\n",
                           in->raw_date,
                           "\nhost:",
                           in->host,
                           "\ncontent-type:",
                           media,
                           "\nx-backendai-version:",
                           in->version ? in->version : "",
                           "\n",
                           body_hex};
    for (size_t i = 0; i < TS_ARRAY_LEN(parts); i++)
        put(&st, parts[i]);
    unsigned char sig[crypto_auth_hmacsha256_BYTES];
    crypto_auth_hmacsha256_final(&st, sig);
    hex(sig, sizeof(sig), hex_out);
    sodium_memzero(&st, sizeof(st));
}

void sign_compute(const char *secret_key, const sign_input *in, char hex_out[SIGN_HEX_LEN + 1])
{
    sign_key k;
    sign_key_derive(secret_key, in->date, in->host, &k);
    sign_compute_keyed(&k, in, hex_out);
    sign_key_wipe(&k);
}

bool sign_parse_authorization(const char *header, char access_key[SIGN_ACCESS_KEY_LEN + 1],
                              char signature[SIGN_HEX_LEN + 1], ts_err *err)
{
    if (!header || !*header) {
        ts_err_set(err, "missing Authorization header");
        return false;
    }
    if (strncmp(header, "BackendAI ", 10) != 0) {
        ts_err_set(err, "Authorization scheme must be BackendAI");
        return false;
    }
    const char *method = NULL, *cred = NULL;
    size_t method_len = 0, cred_len = 0;
    const char *p = header + 10;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *key = p;
        while (*p && *p != '=' && *p != ',')
            p++;
        if (*p != '=') break;
        size_t key_len = (size_t)(p - key);
        while (key_len && key[key_len - 1] == ' ')
            key_len--;
        const char *val = ++p;
        while (*p && *p != ',')
            p++;
        size_t val_len = (size_t)(p - val);
        while (val_len && val[val_len - 1] == ' ')
            val_len--;
        while (val_len && *val == ' ')
            val++, val_len--;
        if (key_len == 10 && strncmp(key, "signMethod", 10) == 0)
            method = val, method_len = val_len;
        if (key_len == 10 && strncmp(key, "credential", 10) == 0) cred = val, cred_len = val_len;
    }
    if (!method || !cred) {
        ts_err_set(err, "Authorization header needs signMethod and credential");
        return false;
    }
    if (method_len != 11 || strncasecmp(method, "HMAC-SHA256", 11) != 0) {
        ts_err_set(err, "unsupported signMethod (only HMAC-SHA256)");
        return false;
    }
    const char *colon = memchr(cred, ':', cred_len);
    if (!colon) {
        ts_err_set(err, "credential must be <access key>:<signature>");
        return false;
    }
    size_t ak_len = (size_t)(colon - cred), sig_len = cred_len - ak_len - 1;
    if (ak_len != SIGN_ACCESS_KEY_LEN || sig_len != SIGN_HEX_LEN) {
        ts_err_set(err,
                   "malformed credential (access key of %d characters and a %d-digit hex "
                   "signature expected)",
                   SIGN_ACCESS_KEY_LEN, SIGN_HEX_LEN);
        return false;
    }
    for (size_t i = 0; i < ak_len; i++) {
        if (!isupper((unsigned char)cred[i]) && !isdigit((unsigned char)cred[i])) {
            ts_err_set(err, "malformed access key");
            return false;
        }
    }
    for (size_t i = 0; i < sig_len; i++) {
        if (!isxdigit((unsigned char)colon[1 + i])) {
            ts_err_set(err, "malformed signature (hex expected)");
            return false;
        }
    }
    memcpy(access_key, cred, ak_len);
    access_key[ak_len] = '\0';
    for (size_t i = 0; i < sig_len; i++)
        signature[i] = (char)tolower((unsigned char)colon[1 + i]);
    signature[sig_len] = '\0';
    return true;
}

/* "+HH:MM", "+HHMM", "+HH", "Z" -> seconds east of UTC. */
static bool parse_offset(const char *p, long *off, const char **end)
{
    if (*p == 'Z' || *p == 'z') {
        *off = 0;
        *end = p + 1;
        return true;
    }
    if (*p != '+' && *p != '-') return false;
    int sign = *p == '-' ? -1 : 1;
    p++;
    if (!isdigit((unsigned char)p[0]) || !isdigit((unsigned char)p[1])) return false;
    long h = (p[0] - '0') * 10 + (p[1] - '0'), m = 0;
    p += 2;
    if (*p == ':') p++;
    if (isdigit((unsigned char)p[0]) && isdigit((unsigned char)p[1])) {
        m = (p[0] - '0') * 10 + (p[1] - '0');
        p += 2;
    }
    if (h > 23 || m > 59) return false;
    *off = sign * (h * 3600 + m * 60);
    *end = p;
    return true;
}

static bool valid_tm(const struct tm *tm)
{
    return tm->tm_year >= 70 && tm->tm_year < 1100 && tm->tm_mon >= 0 && tm->tm_mon < 12 &&
           tm->tm_mday >= 1 && tm->tm_mday <= 31 && tm->tm_hour >= 0 && tm->tm_hour < 24 &&
           tm->tm_min >= 0 && tm->tm_min < 60 && tm->tm_sec >= 0 && tm->tm_sec <= 60;
}

bool sign_parse_date(const char *value, time_t *out)
{
    if (!value || !*value || strlen(value) > 64) return false;
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *p = strptime(value, "%a, %d %b %Y %H:%M:%S", &tm);
    if (p) { /* RFC 7231: "GMT" (or UTC) */
        while (*p == ' ')
            p++;
        if (*p && strcmp(p, "GMT") != 0 && strcmp(p, "UTC") != 0) return false;
        if (!valid_tm(&tm)) return false;
        *out = timegm(&tm);
        return true;
    }
    memset(&tm, 0, sizeof(tm));
    p = strptime(value, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p) {
        memset(&tm, 0, sizeof(tm));
        p = strptime(value, "%Y-%m-%d %H:%M:%S", &tm);
    }
    if (!p || !valid_tm(&tm)) return false;
    if (*p == '.') { /* fractional seconds: ignored */
        p++;
        if (!isdigit((unsigned char)*p)) return false;
        while (isdigit((unsigned char)*p))
            p++;
    }
    long off = 0;
    if (*p) {
        const char *end;
        if (!parse_offset(p, &off, &end) || *end) return false;
    }
    *out = timegm(&tm) - off;
    return true;
}

bool sign_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la != lb) return false;
    return sodium_memcmp(a, b, la) == 0;
}

void sign_new_keypair(char access_key[SIGN_ACCESS_KEY_LEN + 1],
                      char secret_key[SIGN_SECRET_KEY_LEN + 1])
{
    static const char upper[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    static const char mixed[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    if (sodium_init() < 0) ts_panic("libsodium failed to initialize");
    for (int i = 0; i < SIGN_ACCESS_KEY_LEN; i++)
        access_key[i] = upper[randombytes_uniform(sizeof(upper) - 1)];
    access_key[SIGN_ACCESS_KEY_LEN] = '\0';
    for (int i = 0; i < SIGN_SECRET_KEY_LEN; i++)
        secret_key[i] = mixed[randombytes_uniform(sizeof(mixed) - 1)];
    secret_key[SIGN_SECRET_KEY_LEN] = '\0';
}
