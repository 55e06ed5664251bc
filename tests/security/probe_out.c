/* probe_out.c: the probe's one JSON object on stdout (see probe_out.h). */
#define _GNU_SOURCE
#include "probe_out.h"

#include <stdio.h>
#include <string.h>

static int g_first = 1;

void probe_out_str(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

void probe_out_begin(void)
{
    putchar('{');
    g_first = 1;
}

void probe_out_end(void)
{
    puts("}");
}

void probe_out_key(const char *k)
{
    if (!g_first) putchar(',');
    g_first = 0;
    probe_out_str(k);
    putchar(':');
}

const char *probe_out_errname(int e)
{
    if (e == 0) return "";
    const char *n = strerrorname_np(e);
    return n ? n : "E?";
}

/* One entry {"result": r, "errno": e, "err": name, "detail": d}. */
void probe_out_entry(const char *k, const char *result, long ret, int e, const char *detail)
{
    probe_out_key(k);
    printf("{\"result\":");
    probe_out_str(result ? result : "");
    printf(",\"ret\":%ld,\"errno\":%d,\"err\":", ret, e);
    probe_out_str(probe_out_errname(e));
    printf(",\"detail\":");
    probe_out_str(detail ? detail : "");
    putchar('}');
}
