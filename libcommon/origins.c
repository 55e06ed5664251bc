/* origins.c: lists of web origins (origins.h). */
#include "libcommon/origins.h"

#include <string.h>
#include <strings.h>

/* Whether the entry [entry, entry + n) names origin (or, with star, is "*"). */
static bool _entry_matches(const char *entry, size_t n, const char *origin, bool star)
{
    while (n && (entry[n - 1] == ' ' || entry[n - 1] == '\t'))
        n--;
    while (n && (*entry == ' ' || *entry == '\t')) {
        entry++;
        n--;
    }
    if (n > 1 && entry[n - 1] == '/') n--;
    if (n == 1 && entry[0] == '*') return star;
    return n && origin && strlen(origin) == n && strncasecmp(entry, origin, n) == 0;
}

bool origins_listed(const char *list, const char *origin, bool star)
{
    if (!list) return false;
    for (const char *p = list;;) {
        size_t n = strcspn(p, ",");
        if (_entry_matches(p, n, origin, star)) return true;
        if (!p[n]) return false;
        p += n + 1;
    }
}

bool origins_blank(const char *list)
{
    return !list || strspn(list, " \t,") == strlen(list);
}
