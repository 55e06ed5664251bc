/* strip.c: the platform's cookies and headers an app never gets (strip.h). */
#include "services/wsproxy/strip.h"

#include <string.h>
#include <strings.h>

/* RFC 9110 tchar. */
static bool tchar(char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool blank(char c)
{
    return c == ' ' || c == '\t';
}

bool strip_list_parse(const char *spec, strip_list *out, ts_err *err)
{
    memset(out, 0, sizeof(*out));
    const char *p = spec ? spec : "";
    while (*p) {
        const char *end = p + strcspn(p, ",");
        const char *s = p, *e = end;
        while (s < e && blank(*s))
            s++;
        while (e > s && blank(e[-1]))
            e--;
        size_t n = (size_t)(e - s);
        if (n > 0) {
            bool prefix = s[n - 1] == '*';
            size_t name_len = prefix ? n - 1 : n;
            bool ok = name_len > 0 && name_len <= STRIP_NAME_MAX;
            for (size_t i = 0; ok && i < name_len; i++)
                ok = tchar(s[i]) && s[i] != '*';
            if (!ok) {
                ts_err_set(err,
                           "'%.*s' is not a name (letters, digits and !#$%%&'+-.^_`|~, "
                           "at most %d, a '*' only at the end)",
                           (int)(n > 80 ? 80 : n), s, STRIP_NAME_MAX);
                return false;
            }
            if (out->n == STRIP_MAX_NAMES) {
                ts_err_set(err, "more than %d names", STRIP_MAX_NAMES);
                return false;
            }
            memcpy(out->names[out->n].name, s, name_len);
            out->names[out->n].name[name_len] = '\0';
            out->names[out->n].len = name_len;
            out->names[out->n].prefix = prefix;
            out->n++;
        }
        p = *end ? end + 1 : end;
    }
    return true;
}

bool strip_list_has(const strip_list *l, const char *name, size_t n)
{
    for (int i = 0; l && i < l->n; i++) {
        size_t len = l->names[i].len;
        if (l->names[i].prefix ? n >= len : n == len)
            if (strncasecmp(name, l->names[i].name, len) == 0) return true;
    }
    return false;
}

/* "BackendAI" followed by a blank or the end. */
static bool platform_scheme(const char *v, size_t n)
{
    while (n > 0 && blank(*v))
        v++, n--;
    return n >= 9 && strncasecmp(v, "BackendAI", 9) == 0 && (n == 9 || blank(v[9]));
}

static bool span_is(const char *s, size_t n, const char *lit)
{
    return strlen(lit) == n && strncasecmp(s, lit, n) == 0;
}

bool strip_header(const strip_list *headers, const char *name, size_t name_len, const char *value,
                  size_t value_len)
{
    if (strip_list_has(headers, name, name_len)) return true;
    return (span_is(name, name_len, "authorization") ||
            span_is(name, name_len, "proxy-authorization")) &&
           platform_scheme(value, value_len);
}
