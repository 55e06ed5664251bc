/* output.c: tables, records and JSON on stdout. */
#include "services/cli/output.h"
#include "libcommon/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUT_MAX_WIDTH 48 /* a cell wider than this is cut (except in the last column) */

void out_json(const json_t *v)
{
    if (!v) {
        puts("null");
        return;
    }
    char *s = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY);
    puts(s ? s : "null");
    free(s);
}

static void append(char **buf, const char *s)
{
    char *next = ts_asprintf("%s%s", *buf, s);
    free(*buf);
    *buf = next;
}

char *out_text(const json_t *v, out_kind kind)
{
    if (!v) return ts_strdup("-"); /* absent */
    switch (json_typeof(v)) {
    case JSON_STRING: {
        const char *s = json_string_value(v);
        if (kind == OUT_TIME && strlen(s) >= 19 && s[10] == 'T') {
            char *t = ts_strndup(s, 19);
            t[10] = ' ';
            return t;
        }
        return ts_strdup(*s ? s : "-");
    }
    case JSON_INTEGER:
        return ts_asprintf("%" JSON_INTEGER_FORMAT, json_integer_value(v));
    case JSON_REAL:
        return ts_asprintf("%g", json_real_value(v));
    case JSON_TRUE:
        return ts_strdup("true");
    case JSON_FALSE:
        return ts_strdup("false");
    case JSON_OBJECT: {
        char *buf = ts_strdup("");
        const char *k;
        json_t *m;
        json_object_foreach((json_t *)v, k, m)
        {
            char *t = out_text(m, OUT_TEXT);
            if (json_is_array(m)) /* {"local": ["a", "b"], "nfs": []} -> local=a+b,nfs */
                for (char *c = t; *c; c++)
                    if (*c == ',') *c = '+';
            bool bare = json_is_array(m) && json_array_size(m) == 0;
            char *pair =
                ts_asprintf("%s%s%s%s", *buf ? "," : "", k, bare ? "" : "=", bare ? "" : t);
            append(&buf, pair);
            free(pair);
            free(t);
        }
        if (!*buf) append(&buf, "-");
        return buf;
    }
    case JSON_ARRAY: {
        char *buf = ts_strdup("");
        size_t i;
        json_t *m;
        json_array_foreach(v, i, m)
        {
            char *t = out_text(m, OUT_TEXT);
            if (i) append(&buf, ",");
            append(&buf, t);
            free(t);
        }
        if (!*buf) append(&buf, "-");
        return buf;
    }
    default:
        return ts_strdup("-");
    }
}

/* Display width of UTF-8 text (code points; good enough for names). */
static size_t width_of(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) w++;
    return w;
}

static void cut(char *s, size_t max)
{
    size_t w = 0;
    for (char *p = s; *p; p++) {
        if (((unsigned char)*p & 0xC0) == 0x80) continue;
        if (++w > max - 3) {
            strcpy(p, "...");
            return;
        }
    }
}

void out_table(const out_column *cols, const json_t *items)
{
    size_t ncols = 0;
    while (cols[ncols].header)
        ncols++;
    size_t nrows = json_array_size(items);
    char **cells = ts_calloc((nrows + 1) * ncols, sizeof(char *));
    size_t *w = ts_calloc(ncols, sizeof(size_t));
    for (size_t c = 0; c < ncols; c++)
        cells[c] = ts_strdup(cols[c].header);
    for (size_t r = 0; r < nrows; r++) {
        json_t *row = json_array_get(items, r);
        for (size_t c = 0; c < ncols; c++) {
            char *t = out_text(json_object_get(row, cols[c].key), cols[c].kind);
            if (c + 1 < ncols && width_of(t) > OUT_MAX_WIDTH) cut(t, OUT_MAX_WIDTH);
            cells[(r + 1) * ncols + c] = t;
        }
    }
    for (size_t i = 0; i < (nrows + 1) * ncols; i++)
        if (width_of(cells[i]) > w[i % ncols]) w[i % ncols] = width_of(cells[i]);
    for (size_t r = 0; r <= nrows; r++) {
        for (size_t c = 0; c < ncols; c++) {
            const char *t = cells[r * ncols + c];
            if (c + 1 < ncols)
                printf("%s%*s  ", t, (int)(w[c] - width_of(t)), "");
            else
                printf("%s\n", t);
        }
    }
    for (size_t i = 0; i < (nrows + 1) * ncols; i++)
        free(cells[i]);
    free(cells);
    free(w);
}

static bool hidden(const char *key, const char *const *hide)
{
    for (size_t i = 0; hide && hide[i]; i++)
        if (strcmp(hide[i], key) == 0) return true;
    return false;
}

void out_record(const json_t *obj, const char *const *hide)
{
    size_t w = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        if (!hidden(k, hide) && strlen(k) > w) w = strlen(k);
    }
    json_object_foreach((json_t *)obj, k, v)
    {
        if (hidden(k, hide)) continue;
        char *t = out_text(v, OUT_TEXT);
        printf("%-*s  %s\n", (int)w, k, t);
        free(t);
    }
}
