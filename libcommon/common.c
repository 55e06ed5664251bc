/* common.c: errors, allocation, clocks, UUIDs. */
#include "libcommon/common.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

void ts_err_set(ts_err *err, const char *fmt, ...)
{
    if (!err) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
}

void ts_err_prefix(ts_err *err, const char *fmt, ...)
{
    if (!err) return;
    char ctx[256], old[sizeof(err->msg)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof(ctx), fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof(old));
    if (old[0])
        snprintf(err->msg, sizeof(err->msg), "%s: %s", ctx, old);
    else
        snprintf(err->msg, sizeof(err->msg), "%s", ctx);
}

void ts_panic_at(const char *file, int line, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "level=fatal msg=\"%s\" at=%s:%d\n", msg, file, line);
    fflush(stderr);
    abort();
}

void *ts_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) ts_panic("out of memory allocating %zu bytes", n);
    return p;
}

void *ts_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) ts_panic("out of memory allocating %zu x %zu bytes", n, size);
    return p;
}

void *ts_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) ts_panic("out of memory reallocating to %zu bytes", n);
    return q;
}

char *ts_strdup(const char *s)
{
    return ts_strndup(s, strlen(s));
}

char *ts_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = ts_malloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *ts_asprintf(const char *fmt, ...)
{
    va_list ap;
    char *out = NULL;
    va_start(ap, fmt);
    int n = vasprintf(&out, fmt, ap);
    va_end(ap);
    if (n < 0) ts_panic("out of memory formatting a string");
    return out;
}

int64_t ts_now_mono_ms(void)
{
    return ts_now_mono_us() / 1000;
}

int64_t ts_now_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t ts_now_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct timespec ts_realtime_in_ms(int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (ms <= 0) return ts;
    int64_t ns = ts.tv_nsec + (ms % 1000) * 1000000;
    ts.tv_sec += (time_t)(ms / 1000 + ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    return ts;
}

/* Randomness for UUIDs comes from getrandom(2) in 4 KiB batches per thread:
 * one system call per 256 ids instead of one per id (request and event ids
 * are made on every request). The pool is wiped as it is used. */
static __thread uint8_t t_pool[4096];
static __thread size_t t_pool_left;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

/* A forked child must not reuse its parent's pool (same ids twice). */
static void pool_forget(void)
{
    t_pool_left = 0;
}

static void pool_init(void)
{
    pthread_atfork(NULL, NULL, pool_forget);
}

static void random_bytes(uint8_t *out, size_t n)
{
    pthread_once(&pool_once, pool_init);
    if (t_pool_left < n) {
        size_t got = 0;
        while (got < sizeof(t_pool)) {
            ssize_t r = getrandom(t_pool + got, sizeof(t_pool) - got, 0);
            if (r < 0) {
                if (errno == EINTR) continue;
                ts_panic("getrandom failed: %s", strerror(errno));
            }
            got += (size_t)r;
        }
        t_pool_left = sizeof(t_pool);
    }
    uint8_t *src = t_pool + sizeof(t_pool) - t_pool_left;
    memcpy(out, src, n);
    memset(src, 0, n);
    t_pool_left -= n;
}

static void uuid_text(const uint8_t b[16], char out[TS_UUID_STRLEN])
{
    snprintf(out, TS_UUID_STRLEN,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
             b[15]);
}

void ts_uuid4(char out[TS_UUID_STRLEN])
{
    uint8_t b[16];
    random_bytes(b, sizeof(b));
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    uuid_text(b, out);
}

void ts_uuid7(char out[TS_UUID_STRLEN])
{
    uint8_t b[16];
    random_bytes(b + 6, sizeof(b) - 6);
    uint64_t ms = (uint64_t)ts_now_wall_ms();
    for (int i = 0; i < 6; i++)
        b[i] = (uint8_t)(ms >> (8 * (5 - i)));
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x70);
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    uuid_text(b, out);
}

bool ts_uuid_valid(const char *s)
{
    static const char *shape = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";
    if (!s || strlen(s) != 36) return false;
    for (int i = 0; i < 36; i++) {
        char c = s[i];
        if (shape[i] == '-') {
            if (c != '-') return false;
        } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
            return false;
        }
    }
    return true;
}

bool ts_uuid_normalize(const char *s, char out[TS_UUID_STRLEN])
{
    out[0] = '\0';
    size_t n = s ? strlen(s) : 0;
    if (n != 36 && n != 32) return false;
    if (n == 36 && !ts_uuid_valid(s)) return false;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '-' && n == 36) continue;
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
            out[0] = '\0';
            return false;
        }
        if (o == 8 || o == 13 || o == 18 || o == 23) out[o++] = '-';
        out[o++] = (char)(c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c);
    }
    out[o] = '\0';
    return true;
}

uint64_t ts_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

size_t ts_strlcpy(char *dst, const char *src, size_t size)
{
    size_t len = strlen(src);
    if (size) {
        size_t n = len < size - 1 ? len : size - 1;
        memcpy(dst, src, n);
        dst[n] = '\0';
    }
    return len;
}
