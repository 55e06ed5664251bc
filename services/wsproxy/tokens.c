/* tokens.c: tokens, app hashes and cookies (tokens.h). */
#include "services/wsproxy/tokens.h"

#include "services/wsproxy/strip.h"

#include <sodium.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

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

/* One "name=value" pair of a Cookie header: the name, the value (quotes
 * taken off), and the whole pair without the blanks around it. */
typedef struct cookie_pair {
    const char *name, *val, *ps, *pe;
    size_t nlen, vlen;
} cookie_pair;

static bool blank(char c)
{
    return c == ' ' || c == '\t';
}

/* The pair at *p (advanced past it) in "a=b; c=d"; false at the end. */
static bool next_pair(const char **p, const char *end, cookie_pair *c)
{
    const char *q = *p;
    while (q < end && (blank(*q) || *q == ';'))
        q++;
    if (q >= end) return false;
    const char *semi = memchr(q, ';', (size_t)(end - q));
    const char *pe = semi ? semi : end;
    const char *eq = memchr(q, '=', (size_t)(pe - q));
    const char *ne = eq ? eq : pe;
    while (ne > q && blank(ne[-1]))
        ne--;
    const char *vs = eq ? eq + 1 : pe, *ve = pe;
    while (vs < ve && blank(*vs))
        vs++;
    while (ve > vs && blank(ve[-1]))
        ve--;
    if (ve - vs >= 2 && *vs == '"' && ve[-1] == '"') vs++, ve--;
    const char *pend = pe;
    while (pend > q && blank(pend[-1]))
        pend--;
    *c = (cookie_pair){q, vs, q, pend, (size_t)(ne - q), (size_t)(ve - vs)};
    *p = pe;
    return true;
}

/* tessera_app_<16 hex digits> */
static bool app_cookie_name(const char *name, size_t nlen)
{
    return nlen == TOK_COOKIE_NAME_LEN &&
           memcmp(name, TOK_COOKIE_PREFIX, TOK_COOKIE_PREFIX_LEN) == 0 &&
           tok_hash_syntax_ok(name + TOK_COOKIE_PREFIX_LEN, TOK_HASH_LEN);
}

int tok_cookie_apps(const char *hdr, size_t len, tok_cookie *out, int max)
{
    const char *p = hdr, *end = hdr + len;
    cookie_pair c;
    int n = 0;
    while (next_pair(&p, end, &c)) {
        if (!app_cookie_name(c.name, c.nlen)) continue;
        if (n < max) {
            tok_cookie *k = &out[n];
            memcpy(k->hash, c.name + TOK_COOKIE_PREFIX_LEN, TOK_HASH_LEN);
            k->hash[TOK_HASH_LEN] = '\0';
            k->value = c.val;
            k->value_len = c.vlen;
        }
        n++;
    }
    return n;
}

size_t tok_cookie_strip(const char *hdr, size_t len, const strip_list *also, char *out, size_t cap)
{
    if (cap == 0) return 0;
    const char *p = hdr, *end = hdr + len;
    cookie_pair c;
    size_t o = 0;
    while (next_pair(&p, end, &c)) {
        if (app_cookie_name(c.name, c.nlen) || strip_list_has(also, c.name, c.nlen)) continue;
        size_t n = (size_t)(c.pe - c.ps), sep = o ? 2 : 0;
        if (o + sep + n + 1 > cap) continue;
        if (sep) memcpy(out + o, "; ", 2);
        memcpy(out + o + sep, c.ps, n);
        o += sep + n;
    }
    out[o] = '\0';
    return o;
}

bool tok_set_cookie_platform(const char *value, size_t len, const strip_list *also)
{
    const char *eq = memchr(value, '=', len);
    if (!eq) return false;
    const char *s = value, *e = eq;
    while (s < e && blank(*s))
        s++;
    while (e > s && blank(e[-1]))
        e--;
    size_t n = (size_t)(e - s);
    return (n >= TOK_COOKIE_PREFIX_LEN &&
            strncasecmp(s, TOK_COOKIE_PREFIX, TOK_COOKIE_PREFIX_LEN) == 0) ||
           strip_list_has(also, s, n);
}

size_t tok_redirect_location(const char *target, size_t len, char *out, size_t cap)
{
    if (cap < 2) return 0;
    char *path = malloc(len + 1);
    if (!path) return 0;
    size_t n = tok_strip_query_token(target, len, path, len + 1);
    /* "//host", "/\\host" and the like name another host: one slash only. */
    size_t i = 0;
    while (i < n && (path[i] == '/' || path[i] == '\\'))
        i++;
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    out[o++] = '/';
    bool fits = true;
    for (; i < n && fits; i++) {
        unsigned char ch = (unsigned char)path[i];
        if (ch > 0x20 && ch < 0x7f && ch != '\\') {
            if (o + 1 >= cap)
                fits = false;
            else
                out[o++] = (char)ch;
        } else if (o + 3 >= cap) {
            fits = false;
        } else {
            out[o++] = '%';
            out[o++] = hex[ch >> 4];
            out[o++] = hex[ch & 15];
        }
    }
    free(path);
    if (!fits) o = 1;
    out[o] = '\0';
    return o;
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
