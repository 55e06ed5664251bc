/* tokens.c: tokens, app hashes and cookies (tokens.h). */
#include "services/wsproxy/tokens.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

void tok_new(char out[TOK_LEN + 1])
{
    unsigned char raw[32];
    randombytes_buf(raw, sizeof(raw));
    sodium_bin2base64(out, TOK_LEN + 1, raw, sizeof(raw), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero(raw, sizeof(raw));
}

static bool b64url_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

bool tok_syntax_ok(const char *s, size_t n)
{
    if (n != TOK_LEN) return false;
    for (size_t i = 0; i < n; i++)
        if (!b64url_char(s[i])) return false;
    return true;
}

void tok_app_hash(const char *user_id, const char *session_id, const char *app,
                  char out[TOK_HASH_LEN + 1])
{
    crypto_generichash_state st;
    unsigned char d[16];
    crypto_generichash_init(&st, NULL, 0, sizeof(d));
    crypto_generichash_update(&st, (const unsigned char *)user_id, strlen(user_id) + 1);
    crypto_generichash_update(&st, (const unsigned char *)session_id, strlen(session_id) + 1);
    crypto_generichash_update(&st, (const unsigned char *)app, strlen(app));
    crypto_generichash_final(&st, d, sizeof(d));
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < TOK_HASH_LEN / 2; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[TOK_HASH_LEN] = '\0';
}

bool tok_hash_syntax_ok(const char *s, size_t n)
{
    if (n != TOK_HASH_LEN) return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
    return true;
}

/* The query part of a target: [q, end). */
static const char *query_start(const char *target, size_t len)
{
    const char *q = memchr(target, '?', len);
    return q ? q + 1 : NULL;
}

bool tok_query_token(const char *target, size_t len, const char **val, size_t *vlen)
{
    const char *q = query_start(target, len);
    if (!q) return false;
    const char *end = target + len;
    while (q < end) {
        const char *amp = memchr(q, '&', (size_t)(end - q));
        const char *e = amp ? amp : end;
        if (e - q >= 6 && memcmp(q, "token=", 6) == 0) {
            *val = q + 6;
            *vlen = (size_t)(e - q - 6);
            return true;
        }
        q = amp ? amp + 1 : end;
    }
    return false;
}

size_t tok_strip_query_token(const char *target, size_t len, char *out, size_t cap)
{
    if (cap == 0) return 0;
    const char *q = query_start(target, len);
    size_t o = 0;
    if (!q) {
        o = len < cap - 1 ? len : cap - 1;
        memcpy(out, target, o);
        out[o] = '\0';
        return o;
    }
    size_t pathlen = (size_t)(q - 1 - target);
    if (pathlen >= cap) pathlen = cap - 1;
    memcpy(out, target, pathlen);
    o = pathlen;
    const char *end = target + len;
    bool first = true;
    while (q < end) {
        const char *amp = memchr(q, '&', (size_t)(end - q));
        const char *e = amp ? amp : end;
        bool is_token = (e - q >= 6 && memcmp(q, "token=", 6) == 0) ||
                        (e - q == 5 && memcmp(q, "token", 5) == 0);
        if (!is_token && e > q) {
            size_t n = (size_t)(e - q);
            if (o + 1 + n >= cap) break;
            out[o++] = first ? '?' : '&';
            memcpy(out + o, q, n);
            o += n;
            first = false;
        }
        q = amp ? amp + 1 : end;
    }
    out[o] = '\0';
    return o;
}

/* Walk "a=b; c=d" pairs: calls fn(name, nlen, value, vlen, whole pair start, end). */
typedef void (*pair_fn)(void *ctx, const char *name, size_t nlen, const char *val, size_t vlen,
                        const char *ps, const char *pe);

static void each_pair(const char *hdr, size_t len, pair_fn fn, void *ctx)
{
    const char *p = hdr, *end = hdr + len;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == ';'))
            p++;
        if (p >= end) break;
        const char *ps = p;
        const char *semi = memchr(p, ';', (size_t)(end - p));
        const char *pe = semi ? semi : end;
        const char *eq = memchr(p, '=', (size_t)(pe - p));
        const char *ne = eq ? eq : pe;
        while (ne > p && (ne[-1] == ' ' || ne[-1] == '\t'))
            ne--;
        const char *vs = eq ? eq + 1 : pe, *ve = pe;
        while (vs < ve && (*vs == ' ' || *vs == '\t'))
            vs++;
        while (ve > vs && (ve[-1] == ' ' || ve[-1] == '\t'))
            ve--;
        if (ve - vs >= 2 && *vs == '"' && ve[-1] == '"') vs++, ve--;
        const char *pend = pe;
        while (pend > ps && (pend[-1] == ' ' || pend[-1] == '\t'))
            pend--;
        fn(ctx, p, (size_t)(ne - p), vs, (size_t)(ve - vs), ps, pend);
        p = pe;
    }
}

static bool app_cookie_name(const char *name, size_t nlen)
{
    return nlen == TOK_COOKIE_NAME_LEN &&
           memcmp(name, TOK_COOKIE_PREFIX, TOK_COOKIE_PREFIX_LEN) == 0 &&
           tok_hash_syntax_ok(name + TOK_COOKIE_PREFIX_LEN, TOK_HASH_LEN);
}

struct apps_ctx {
    tok_cookie *out;
    int max, n;
};

static void apps_fn(void *vctx, const char *name, size_t nlen, const char *val, size_t vlen,
                    const char *ps, const char *pe)
{
    (void)ps, (void)pe;
    struct apps_ctx *c = vctx;
    if (!app_cookie_name(name, nlen)) return;
    if (c->n < c->max) {
        tok_cookie *k = &c->out[c->n];
        memcpy(k->hash, name + TOK_COOKIE_PREFIX_LEN, TOK_HASH_LEN);
        k->hash[TOK_HASH_LEN] = '\0';
        k->value = val;
        k->value_len = vlen;
    }
    c->n++;
}

int tok_cookie_apps(const char *hdr, size_t len, tok_cookie *out, int max)
{
    struct apps_ctx c = {out, max, 0};
    each_pair(hdr, len, apps_fn, &c);
    return c.n;
}

struct strip_ctx {
    char *out;
    size_t cap, o;
};

static void strip_fn(void *vctx, const char *name, size_t nlen, const char *val, size_t vlen,
                     const char *ps, const char *pe)
{
    (void)val, (void)vlen;
    struct strip_ctx *c = vctx;
    if (app_cookie_name(name, nlen)) return;
    size_t n = (size_t)(pe - ps);
    size_t sep = c->o ? 2 : 0;
    if (c->o + sep + n + 1 > c->cap) return;
    if (sep) memcpy(c->out + c->o, "; ", 2);
    memcpy(c->out + c->o + sep, ps, n);
    c->o += sep + n;
}

size_t tok_cookie_strip(const char *hdr, size_t len, char *out, size_t cap)
{
    struct strip_ctx c = {out, cap, 0};
    if (cap == 0) return 0;
    each_pair(hdr, len, strip_fn, &c);
    out[c.o] = '\0';
    return c.o;
}

bool tok_host_hash(const char *host, size_t len, char out[TOK_HASH_LEN + 1])
{
    if (len <= TOK_HASH_LEN || host[TOK_HASH_LEN] != '.') return false;
    char lowered[TOK_HASH_LEN];
    for (int i = 0; i < TOK_HASH_LEN; i++) {
        char ch = host[i];
        lowered[i] = (ch >= 'A' && ch <= 'F') ? (char)(ch + 32) : ch;
    }
    if (!tok_hash_syntax_ok(lowered, TOK_HASH_LEN)) return false;
    memcpy(out, lowered, TOK_HASH_LEN);
    out[TOK_HASH_LEN] = '\0';
    return true;
}

size_t tok_set_cookie(char *out, size_t cap, const char *hash, const char *value, long max_age_s,
                      bool secure)
{
    int n = snprintf(out, cap, "%s%s=%s; Path=/; Max-Age=%ld; HttpOnly; SameSite=Lax%s",
                     TOK_COOKIE_PREFIX, hash, value ? value : "", value ? max_age_s : 0L,
                     secure ? "; Secure" : "");
    if (n < 0) return 0;
    return (size_t)n < cap ? (size_t)n : cap - 1;
}
