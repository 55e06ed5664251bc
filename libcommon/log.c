/* log.c: logfmt lines, one write per line so concurrent threads never interleave. */
#include "libcommon/log.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

int tlog_min_level = TLOG_LEVEL_INFO;

static char g_service[48] = "tessera";
static char g_instance[64] = "";
static FILE *g_stream;

struct tlog_ctx {
    char request_id[64];
    char session[64];
    char kernel[64];
    char agent[64];
    char user[64];
    char access_key[32];
    char entity_key[16];
    char entity[128];
};
static __thread struct tlog_ctx t_ctx;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void tlog_init(const char *service, const char *instance)
{
    ts_strlcpy(g_service, service ? service : "tessera", sizeof(g_service));
    ts_strlcpy(g_instance, instance ? instance : "", sizeof(g_instance));
}

bool tlog_set_level(const char *name)
{
    for (int i = 0; i < (int)TS_ARRAY_LEN(level_names); i++) {
        if (name && strcmp(name, level_names[i]) == 0) {
            tlog_min_level = i;
            return true;
        }
    }
    return false;
}

const char *tlog_level_name(int level)
{
    if (level < 0 || level >= (int)TS_ARRAY_LEN(level_names)) return "unknown";
    return level_names[level];
}

void tlog_set_stream(struct _IO_FILE *stream)
{
    g_stream = (FILE *)stream;
}

static void set_field(char *dst, size_t size, const char *v)
{
    ts_strlcpy(dst, v ? v : "", size);
}

void tlog_ctx_request(const char *v)
{
    set_field(t_ctx.request_id, sizeof(t_ctx.request_id), v);
}
void tlog_ctx_session(const char *v)
{
    set_field(t_ctx.session, sizeof(t_ctx.session), v);
}
void tlog_ctx_kernel(const char *v)
{
    set_field(t_ctx.kernel, sizeof(t_ctx.kernel), v);
}
void tlog_ctx_agent(const char *v)
{
    set_field(t_ctx.agent, sizeof(t_ctx.agent), v);
}
void tlog_ctx_user(const char *v)
{
    set_field(t_ctx.user, sizeof(t_ctx.user), v);
}
void tlog_ctx_access_key(const char *v)
{
    set_field(t_ctx.access_key, sizeof(t_ctx.access_key), v);
}
void tlog_ctx_entity(const char *key, const char *v)
{
    bool ok = key && key[0] && v && v[0];
    for (const char *p = key; ok && *p; p++)
        ok = (*p >= 'a' && *p <= 'z') || *p == '_';
    set_field(t_ctx.entity_key, sizeof(t_ctx.entity_key), ok ? key : NULL);
    set_field(t_ctx.entity, sizeof(t_ctx.entity), ok ? v : NULL);
}
void tlog_ctx_clear(void)
{
    memset(&t_ctx, 0, sizeof(t_ctx));
}

/* ---- values -------------------------------------------------------------------- */

/* Append v[0..n) to out as the inside of a quoted logfmt value: '"' and '\'
 * escaped, newline, CR and tab as \n \r \t, other control bytes as '?'.
 * Stops where cap - o would leave no room for the closing quote. */
static size_t _put_escaped(char *out, size_t o, size_t cap, const char *v, size_t n)
{
    for (size_t i = 0; i < n && o + 3 < cap; i++) {
        unsigned char c = (unsigned char)v[i];
        char e = c == '"'    ? '"'
                 : c == '\\' ? '\\'
                 : c == '\n' ? 'n'
                 : c == '\r' ? 'r'
                 : c == '\t' ? 't'
                             : 0;
        if (e) {
            out[o++] = '\\';
            out[o++] = e;
        } else {
            out[o++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
        }
    }
    return o;
}

const char *tlog_quote(char *buf, size_t size, const char *value)
{
    if (size < 3) {
        if (size) buf[0] = '\0';
        return buf;
    }
    const char *v = value ? value : "";
    size_t o = 0;
    buf[o++] = '"';
    o = _put_escaped(buf, o, size, v, strlen(v));
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

/* Whether v[0..n) must be quoted to stand as one logfmt value. */
static bool _needs_quotes(const char *v, size_t n)
{
    if (n == 0) return true;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f) return true;
    }
    return false;
}

/* Whether v[0..n) is already one quoted logfmt value (tlog_quote's output). */
static bool _is_quoted(const char *v, size_t n)
{
    if (n < 2 || v[0] != '"' || v[n - 1] != '"') return false;
    for (size_t i = 1; i + 1 < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c < 0x20 || c == 0x7f || c == '"') return false;
        if (c == '\\' && ++i + 1 >= n) return false; /* escapes the closing quote */
    }
    return true;
}

/* Where a %s of kvfmt stands: between quotes the format wrote (key="%s"),
 * as a whole value (key=%s followed by a space or the end), or as part of
 * a value or of the line (key=%s:%d, "%s%s"). */
enum kv_place { KV_QUOTED, KV_WHOLE, KV_PART };

/* Append the string v (n bytes) as its place in the line asks: escaped
 * between quotes; quoted and escaped as a whole value that needs it (one
 * tlog_quote already made stays as it is); as it is as a part (control
 * bytes as '?'), the caller's to quote. */
static size_t _put_string(char *out, size_t o, size_t cap, const char *v, size_t n,
                          enum kv_place place)
{
    if (place == KV_QUOTED) return _put_escaped(out, o, cap, v, n);
    if (place == KV_WHOLE && !_is_quoted(v, n) && _needs_quotes(v, n)) {
        if (o + 3 >= cap) return o;
        out[o++] = '"';
        o = _put_escaped(out, o, cap, v, n);
        out[o++] = '"';
        return o;
    }
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        unsigned char c = (unsigned char)v[i];
        out[o++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    return o;
}

/* One conversion of kvfmt, spec[0..len) ("%-08.3lld", "%.*s"), its
 * arguments taken from ap; returns the new end of out. */
static size_t _put_conversion(char *out, size_t o, size_t cap, const char *spec, size_t len,
                              enum kv_place place, va_list *ap)
{
    char f[32];
    if (len >= sizeof(f)) return o;
    memcpy(f, spec, len);
    f[len] = '\0';
    int star[2], nstar = 0, prec = -1;
    const char *dot = memchr(f, '.', len);
    for (size_t i = 1; i + 1 < len; i++) {
        if (f[i] != '*' || nstar == 2) continue;
        star[nstar] = va_arg(*ap, int);
        if (dot && f + i > dot) prec = star[nstar];
        nstar++;
    }
    if (dot && prec < 0 && dot[1] >= '0' && dot[1] <= '9') prec = atoi(dot + 1);
    if (dot && prec < 0 && dot[1] != '*') prec = 0; /* "%.s" */
    /* the length modifier: "", "h", "hh", "l", "ll", "z", "t", "j" or "L" */
    const char *mod = f + len - 1;
    while (mod > f + 1 && strchr("hlLjzt", mod[-1]))
        mod--;
    char m = mod == f + len - 1 ? 0 : mod[1] == 'l' ? 'q' : mod[0]; /* q: ll */
    if (o >= cap) return o;
    int n = -1;
#define KV_PUT(T)                                                                                  \
    do {                                                                                           \
        T x_ = va_arg(*ap, T);                                                                     \
        n = nstar == 0   ? snprintf(out + o, cap - o, f, x_)                                       \
            : nstar == 1 ? snprintf(out + o, cap - o, f, star[0], x_)                              \
                         : snprintf(out + o, cap - o, f, star[0], star[1], x_);                    \
    } while (0)
    switch (f[len - 1]) {
    case 's': {
        const char *v = va_arg(*ap, const char *);
        if (!v) v = "(null)";
        return _put_string(out, o, cap, v, prec >= 0 ? strnlen(v, (size_t)prec) : strlen(v), place);
    }
    case 'd':
    case 'i':
    case 'u':
    case 'o':
    case 'x':
    case 'X':
        /* the signed type of each size: printf reads it as the format says */
        if (m == 'q')
            KV_PUT(long long);
        else if (m == 'l')
            KV_PUT(long);
        else if (m == 'z' || m == 't')
            KV_PUT(ssize_t);
        else if (m == 'j')
            KV_PUT(intmax_t);
        else
            KV_PUT(int); /* h, hh: promoted */
        break;
    case 'c':
        KV_PUT(int);
        break;
    case 'p':
        KV_PUT(void *);
        break;
    case 'e':
    case 'E':
    case 'f':
    case 'F':
    case 'g':
    case 'G':
    case 'a':
    case 'A':
        if (m == 'L')
            KV_PUT(long double);
        else
            KV_PUT(double);
        break;
    default: /* %n and unknown conversions: nothing (the compiler checked kvfmt) */
        break;
    }
#undef KV_PUT
    if (n < 0) return o;
    return (size_t)n >= cap - o ? cap - 1 : o + (size_t)n;
}

/* kvfmt with its arguments into out[o..cap): printf's conversions, with each
 * %s written as its place asks (_put_string), so that no argument (an error
 * text above all) can end a value, add a field or a line. */
static size_t _put_kv(char *out, size_t o, size_t cap, const char *kvfmt, va_list *ap)
{
    bool quoted = false;
    for (const char *p = kvfmt; *p && o + 1 < cap;) {
        if (*p != '%') {
            if (*p == '"' && (p == kvfmt || p[-1] != '\\')) quoted = !quoted;
            out[o++] = *p++;
            continue;
        }
        if (p[1] == '%') {
            out[o++] = '%';
            p += 2;
            continue;
        }
        size_t len = 1 + strspn(p + 1, "-+ #0'123456789.*hlLjzt");
        if (!p[len]) break;
        len++;
        const char *after = p + len;
        enum kv_place place = quoted                                                    ? KV_QUOTED
                              : p > kvfmt && p[-1] == '=' && (!*after || *after == ' ') ? KV_WHOLE
                                                                                        : KV_PART;
        o = _put_conversion(out, o, cap, p, len, place, ap);
        p = after;
    }
    if (quoted) { /* cut short inside a quoted value: close it */
        if (o + 1 >= cap) o = cap - 2;
        size_t bs = 0;
        while (bs < o && out[o - 1 - bs] == '\\')
            bs++;
        if (bs % 2) o--;
        out[o++] = '"';
    }
    return o;
}

static size_t append(char *line, size_t o, size_t cap, const char *fmt, ...) TS_PRINTF(4, 5);
static size_t append(char *line, size_t o, size_t cap, const char *fmt, ...)
{
    if (o >= cap) return o;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line + o, cap - o, fmt, ap);
    va_end(ap);
    if (n < 0) return o;
    return (size_t)n >= cap - o ? cap - 1 : o + (size_t)n;
}

void tlog_write(int level, const char *msg, const char *kvfmt, ...)
{
    char line[4096], q[1024];
    size_t cap = sizeof(line) - 1, o = 0;
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    o = append(line, o, cap, "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s service=%s",
               tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
               ts.tv_nsec / 1000000, tlog_level_name(level), g_service);
    if (g_instance[0]) o = append(line, o, cap, " instance=%s", g_instance);
    o = append(line, o, cap, " msg=%s", tlog_quote(q, sizeof(q), msg));
    if (kvfmt && kvfmt[0] && o + 1 < cap) {
        va_list ap;
        va_start(ap, kvfmt);
        line[o++] = ' ';
        o = _put_kv(line, o, cap, kvfmt, &ap);
        va_end(ap);
    }
    if (t_ctx.request_id[0]) o = append(line, o, cap, " request_id=%s", t_ctx.request_id);
    if (t_ctx.session[0]) o = append(line, o, cap, " session=%s", t_ctx.session);
    if (t_ctx.kernel[0]) o = append(line, o, cap, " kernel=%s", t_ctx.kernel);
    if (t_ctx.agent[0]) o = append(line, o, cap, " agent=%s", t_ctx.agent);
    if (t_ctx.entity[0])
        o = append(line, o, cap, " %s=%s", t_ctx.entity_key,
                   tlog_quote(q, sizeof(q), t_ctx.entity));
    if (t_ctx.user[0]) o = append(line, o, cap, " user=%s", tlog_quote(q, sizeof(q), t_ctx.user));
    if (t_ctx.access_key[0])
        o = append(line, o, cap, " access_key=%s", tlog_quote(q, sizeof(q), t_ctx.access_key));
    for (size_t i = 0; i < o; i++)
        if (line[i] == '\n' || line[i] == '\r') line[i] = ' ';
    line[o++] = '\n';
    FILE *out = g_stream ? g_stream : stderr;
    if (out == stderr) {
        ssize_t w = write(STDERR_FILENO, line, o);
        (void)w;
    } else {
        fwrite(line, 1, o, out);
        fflush(out);
    }
}
