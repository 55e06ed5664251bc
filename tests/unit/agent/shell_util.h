/* shell_util.h: shell and text helpers of the agent's unit tests that drive
 * real containers, namespaces and iptables (kernel_fixture.h,
 * test_netfilter_*): header-only, each test gets its own static copies. */
#ifndef TESTS_SHELL_UTIL_H
#define TESTS_SHELL_UTIL_H

#include "libcommon/common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Run a shell command (printf-style); its exit status as system() says. */
static inline int sh(const char *fmt, ...) TS_PRINTF(1, 2);
static inline int sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    return system(cmd);
}

/* What a shell command prints (heap, at most 1 MiB, trailing newlines
 * dropped). */
static inline char *out_of(const char *fmt, ...) TS_PRINTF(1, 2);
static inline char *out_of(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    FILE *p = popen(cmd, "r");
    char *buf = calloc(1, 1 << 20);
    size_t n = p ? fread(buf, 1, (1 << 20) - 1, p) : 0;
    if (p) pclose(p);
    while (n && buf[n - 1] == '\n')
        buf[--n] = '\0';
    return buf;
}

/* How often what stands in text. */
static inline int count(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p++)
        n++;
    return n;
}

/* A file's first 64 KiB (heap, NUL-terminated), or NULL. */
static inline char *read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *buf = calloc(1, 65536);
    size_t n = fread(buf, 1, 65535, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

#endif
