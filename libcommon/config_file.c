/* config_file.c: the config file syntax (see config_file.h). */
#include "libcommon/config_file.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_key_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.';
}

static bool valid_key(const char *k)
{
    if (!*k || *k == '.') return false;
    for (const char *p = k; *p; p++) {
        if (!is_key_char(*p)) return false;
        if (*p == '.' && (p[1] == '.' || p[1] == '\0')) return false;
    }
    return true;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = '\0';
    return s;
}

/* Only whitespace or a comment may follow a value or a section header. */
static bool only_comment(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return *s == '\0' || *s == '#';
}

/* Decode a quoted string starting after the opening quote, in place into out
 * (which may alias s). Sets *rest after the closing quote. */
static bool parse_quoted(char *s, char *out, char **rest, ts_err *err)
{
    char *w = out;
    for (char *p = s;; p++) {
        if (*p == '\0') {
            ts_err_set(err, "syntax error: unterminated string");
            return false;
        }
        if (*p == '"') {
            *w = '\0';
            *rest = p + 1;
            return true;
        }
        if (*p != '\\') {
            *w++ = *p;
            continue;
        }
        p++;
        switch (*p) {
        case '"':
            *w++ = '"';
            break;
        case '\\':
            *w++ = '\\';
            break;
        case 'n':
            *w++ = '\n';
            break;
        case 't':
            *w++ = '\t';
            break;
        case '\0':
            ts_err_set(err, "syntax error: unterminated string");
            return false;
        default:
            ts_err_set(err, "syntax error: unknown escape '\\%c' in string", *p);
            return false;
        }
    }
}

/* One line; section is updated for headers. */
static bool parse_line(char *line, char **section, cfg_file_entry_fn fn, void *ctx, int lineno,
                       ts_err *err)
{
    char *s = trim(line);
    if (*s == '\0' || *s == '#') return true;

    if (*s == '[') {
        char *end = strchr(s, ']');
        if (!end) {
            ts_err_set(err, "syntax error: missing ']' in section header");
            return false;
        }
        if (!only_comment(end + 1)) {
            ts_err_set(err, "syntax error: unexpected text after section header");
            return false;
        }
        *end = '\0';
        char *name = trim(s + 1);
        if (!valid_key(name)) {
            ts_err_set(err, "syntax error: invalid section name '%s'", name);
            return false;
        }
        free(*section);
        *section = ts_strdup(name);
        return true;
    }

    char *eq = strchr(s, '=');
    if (!eq) {
        ts_err_set(err, "syntax error: expected 'key = value'");
        return false;
    }
    *eq = '\0';
    char *key = trim(s);
    if (!valid_key(key)) {
        ts_err_set(err, "syntax error: invalid key '%s'", key);
        return false;
    }
    char *value = trim(eq + 1);
    if (*value == '"') {
        char *rest;
        if (!parse_quoted(value + 1, value, &rest, err)) return false;
        if (!only_comment(rest)) {
            ts_err_set(err, "syntax error: unexpected text after string");
            return false;
        }
    } else {
        char *hash = strchr(value, '#');
        if (hash) *hash = '\0';
        value = trim(value);
        if (strchr(value, '"')) {
            ts_err_set(err, "syntax error: stray '\"' in value (quote the whole value)");
            return false;
        }
    }

    char *full = *section ? ts_asprintf("%s.%s", *section, key) : ts_strdup(key);
    bool ok = fn(ctx, full, value, lineno, err);
    free(full);
    return ok;
}

bool cfg_file_parse(const char *path, cfg_file_entry_fn fn, void *ctx, ts_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        ts_err_set(err, "cannot read %s: %s", path, strerror(errno));
        return false;
    }
    char *line = NULL, *section = NULL;
    size_t cap = 0;
    int lineno = 0;
    bool ok = true;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if (memchr(line, '\0', (size_t)len)) {
            ts_err_set(err, "%s:%d: syntax error: NUL byte in line", path, lineno);
            ok = false;
            break;
        }
        if (!parse_line(line, &section, fn, ctx, lineno, err)) {
            ts_err_prefix(err, "%s:%d", path, lineno);
            ok = false;
            break;
        }
    }
    if (ok && ferror(f)) {
        ts_err_set(err, "cannot read %s: %s", path, strerror(errno));
        ok = false;
    }
    free(line);
    free(section);
    fclose(f);
    return ok;
}

void cfg_file_write_quoted(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        switch (*s) {
        case '"':
            fputs("\\\"", out);
            break;
        case '\\':
            fputs("\\\\", out);
            break;
        case '\n':
            fputs("\\n", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        default:
            fputc(*s, out);
        }
    }
    fputc('"', out);
}
