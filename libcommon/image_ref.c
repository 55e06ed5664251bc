/* image_ref.c: see image_ref.h. Each check walks its span once; nothing here
 * allocates until the whole reference is known to be good. */
#include "libcommon/image_ref.h"

#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 255
#define TAG_MAX_LEN 128
#define SHA256_HEX 64

static bool is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
    return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

static bool looks_like_host(const char *s, size_t n)
{
    if (n == 9 && memcmp(s, "localhost", 9) == 0) return true;
    return memchr(s, '.', n) || memchr(s, ':', n) || (n && s[0] == '[');
}

static bool port_ok(const char *p, size_t n)
{
    if (n == 0 || n > 5) return false;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return false;
        v = v * 10 + (p[i] - '0');
    }
    return v >= 1 && v <= 65535;
}

static bool host_ok(const char *s, size_t n)
{
    size_t hn = n;
    if (n && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close) return false;
        int colons = 0;
        for (const char *p = s + 1; p < close; p++) {
            bool hex =
                (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F');
            if (*p == ':')
                colons++;
            else if (!hex)
                return false;
        }
        if (colons < 2 || close - s > 40) return false;
        size_t used = (size_t)(close - s) + 1;
        if (used == n) return true;
        return s[used] == ':' && port_ok(s + used + 1, n - used - 1);
    }
    const char *colon = memchr(s, ':', n);
    if (colon) {
        hn = (size_t)(colon - s);
        if (!port_ok(colon + 1, n - hn - 1)) return false;
    }
    if (hn == 0) return false;
    size_t i = 0;
    while (i < hn) { /* one component */
        size_t start = i;
        while (i < hn && (is_alnum(s[i]) || s[i] == '-'))
            i++;
        if (i == start || s[start] == '-' || s[i - 1] == '-') return false;
        if (i < hn) {
            if (s[i] != '.' || i + 1 == hn) return false;
            i++;
        }
    }
    return true;
}

static bool path_ok(const char *s, size_t n)
{
    if (n == 0) return false;
    size_t i = 0;
    for (;;) { /* one part: alnum+ (sep alnum+)* */
        size_t run = 0;
        while (i < n && is_lower_alnum(s[i])) {
            i++;
            run++;
        }
        if (run == 0) return false;
        if (i == n) return true;
        if (s[i] == '/') {
            i++;
            continue;
        }
        if (s[i] == '.') {
            i++;
        } else if (s[i] == '_') {
            i++;
            if (i < n && s[i] == '_') i++;
        } else if (s[i] == '-') {
            while (i < n && s[i] == '-')
                i++;
        } else {
            return false;
        }
        if (i == n || !is_lower_alnum(s[i])) return false;
    }
}

static bool tag_ok(const char *t, size_t n)
{
    if (n == 0 || n > TAG_MAX_LEN || !(is_alnum(t[0]) || t[0] == '_')) return false;
    for (size_t i = 1; i < n; i++)
        if (!(is_alnum(t[i]) || t[i] == '_' || t[i] == '.' || t[i] == '-')) return false;
    return true;
}

static bool digest_ok(const char *d, ts_err *err, const char *text)
{
    const char *colon = strchr(d, ':');
    if (!colon || colon == d) {
        ts_err_set(err, "invalid image reference '%s': malformed digest", text);
        return false;
    }
    if ((size_t)(colon - d) != 6 || memcmp(d, "sha256", 6) != 0) {
        ts_err_set(err,
                   "invalid image reference '%s': unsupported digest algorithm '%.*s' (only "
                   "sha256)",
                   text, (int)(colon - d > 32 ? 32 : colon - d), d);
        return false;
    }
    const char *h = colon + 1;
    size_t n = strlen(h);
    bool ok = n == SHA256_HEX;
    for (size_t i = 0; ok && i < n; i++)
        ok = (h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f');
    if (!ok) ts_err_set(err, "invalid image reference '%s': malformed sha256 digest", text);
    return ok;
}

/* The spans of a reference; false with err. host_len 0: no host. */
typedef struct ref_spans {
    const char *host, *path, *tag, *digest;
    size_t host_len, path_len, tag_len;
} ref_spans;

static bool split(const char *text, ref_spans *sp, ts_err *err)
{
    memset(sp, 0, sizeof(*sp));
    size_t len = text ? strlen(text) : 0;
    if (len == 0) {
        ts_err_set(err, "invalid image reference: it is empty");
        return false;
    }
    if (len > IMAGE_REF_MAX) {
        ts_err_set(err, "invalid image reference: longer than %d bytes", IMAGE_REF_MAX);
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c <= 0x20 || c >= 0x7f) {
            ts_err_set(err, "invalid image reference: it contains a space, a control character "
                            "or a non-ASCII byte");
            return false;
        }
    }
    const char *at = strchr(text, '@');
    size_t name_end = at ? (size_t)(at - text) : len;
    if (at && !digest_ok(at + 1, err, text)) return false;
    if (at) sp->digest = at + 1;
    const char *slash = memchr(text, '/', name_end);
    size_t rest = 0;
    if (slash && looks_like_host(text, (size_t)(slash - text))) {
        sp->host = text;
        sp->host_len = (size_t)(slash - text);
        rest = sp->host_len + 1;
        if (!host_ok(sp->host, sp->host_len)) {
            ts_err_set(err, "invalid image reference '%s': bad registry host '%.*s'", text,
                       (int)sp->host_len, sp->host);
            return false;
        }
    }
    sp->path = text + rest;
    sp->path_len = name_end - rest;
    const char *last_slash = NULL;
    for (const char *p = sp->path; p < text + name_end; p++)
        if (*p == '/') last_slash = p;
    const char *from = last_slash ? last_slash : sp->path;
    const char *colon = memchr(from, ':', (size_t)(text + name_end - from));
    if (colon) {
        sp->tag = colon + 1;
        sp->tag_len = (size_t)(text + name_end - sp->tag);
        sp->path_len = (size_t)(colon - sp->path);
        if (!tag_ok(sp->tag, sp->tag_len)) {
            ts_err_set(err,
                       "invalid image reference '%s': bad tag '%.*s' (want [A-Za-z0-9_] then "
                       "up to 127 of [A-Za-z0-9_.-])",
                       text, (int)sp->tag_len, sp->tag);
            return false;
        }
    }
    if (!path_ok(sp->path, sp->path_len)) {
        ts_err_set(err,
                   "invalid image reference '%s': bad repository name '%.*s' (lowercase "
                   "letters and digits, separated by '.', '_', '__', '-' or '/')",
                   text, (int)sp->path_len, sp->path);
        return false;
    }
    if (sp->host_len + 1 + sp->path_len > NAME_MAX_LEN) {
        ts_err_set(err, "invalid image reference '%.100s...': the name is longer than %d bytes",
                   text, NAME_MAX_LEN);
        return false;
    }
    return true;
}

bool image_ref_host_valid(const char *host)
{
    return host && strlen(host) <= NAME_MAX_LEN && host_ok(host, strlen(host));
}

bool image_ref_valid(const char *text, ts_err *err)
{
    ref_spans sp;
    return split(text, &sp, err);
}

void image_ref_free(image_ref *r)
{
    if (!r) return;
    free(r->registry);
    free(r->api_host);
    free(r->repository);
    free(r->tag);
    free(r->digest);
    memset(r, 0, sizeof(*r));
}

bool image_ref_parse(const char *text, const char *default_registry, image_ref *out, ts_err *err)
{
    memset(out, 0, sizeof(*out));
    ref_spans sp;
    if (!split(text, &sp, err)) return false;
    if (sp.host_len) {
        out->registry = ts_strndup(sp.host, sp.host_len);
    } else if (default_registry && *default_registry) {
        out->registry = ts_strdup(default_registry);
    } else {
        ts_err_set(err,
                   "image reference '%s' names no registry (expected host[:port]/repository[:tag]) "
                   "and no default registry is configured",
                   text);
        return false;
    }
    if (sp.tag)
        out->tag = ts_strndup(sp.tag, sp.tag_len);
    else if (!sp.digest)
        out->tag = ts_strdup("latest");
    if (sp.digest) out->digest = ts_strdup(sp.digest);
    char *path = ts_strndup(sp.path, sp.path_len);
    if (strcmp(out->registry, "docker.io") == 0 || strcmp(out->registry, "index.docker.io") == 0) {
        out->api_host = ts_strdup("registry-1.docker.io");
        out->repository = strchr(path, '/') ? ts_strdup(path) : ts_asprintf("library/%s", path);
        free(path);
    } else {
        out->api_host = ts_strdup(out->registry);
        out->repository = path;
    }
    return true;
}
