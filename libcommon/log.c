/* log.c: logfmt lines, one write per line so concurrent threads never interleave. */
#include "libcommon/log.h"

#include <stdio.h>
#include <string.h>
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

const char *tlog_quote(char *buf, size_t size, const char *value)
{
    size_t o = 0;
    if (size < 3) {
        if (size) buf[0] = '\0';
        return buf;
    }
    buf[o++] = '"';
    for (const char *p = value ? value : ""; *p && o + 3 < size; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\') {
            buf[o++] = '\\';
            buf[o++] = (char)c;
        } else if (c == '\n') {
            buf[o++] = '\\';
            buf[o++] = 'n';
        } else if (c < 0x20 || c == 0x7f) {
            buf[o++] = '?';
        } else {
            buf[o++] = (char)c;
        }
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
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
    if (kvfmt && kvfmt[0]) {
        va_list ap;
        va_start(ap, kvfmt);
        if (o + 1 < cap) {
            line[o++] = ' ';
            int n = vsnprintf(line + o, cap - o, kvfmt, ap);
            if (n > 0) o = (size_t)n >= cap - o ? cap - 1 : o + (size_t)n;
        }
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
