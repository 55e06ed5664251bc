/* sql_row.c: an INSERT built from named columns (sql_row.h). */
#include "sql_row.h"

#include "libcommon/buf.h"

#include <stdio.h>
#include <string.h>

void sql_row_set(sql_row *r, const char *name, const char *expr, const char *value)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->col[i].name, name) == 0) ts_panic("sql_row: column %s set twice", name);
    if (r->n >= SQL_ROW_MAX) ts_panic("sql_row: more than %d columns", SQL_ROW_MAX);
    r->col[r->n].name = name;
    r->col[r->n].expr = expr;
    r->col[r->n].value = value;
    r->n++;
}

char *sql_row_insert(const sql_row *r, const char *table, const char **params)
{
    ts_buf b = {0};
    ts_buf_append_str(&b, "INSERT INTO ");
    ts_buf_append_str(&b, table);
    ts_buf_append_str(&b, " (");
    for (int i = 0; i < r->n; i++) {
        if (i) ts_buf_append_str(&b, ", ");
        ts_buf_append_str(&b, r->col[i].name);
    }
    ts_buf_append_str(&b, ") VALUES (");
    for (int i = 0; i < r->n; i++) {
        const char *e = r->col[i].expr ? r->col[i].expr : "?";
        const char *q = strchr(e, '?');
        if (!q) ts_panic("sql_row: column %s: expression %s has no '?'", r->col[i].name, e);
        char ref[16];
        snprintf(ref, sizeof(ref), "$%d", i + 1);
        if (i) ts_buf_append_str(&b, ", ");
        ts_buf_append(&b, e, (size_t)(q - e));
        ts_buf_append_str(&b, ref);
        ts_buf_append_str(&b, q + 1);
        params[i] = r->col[i].value;
    }
    ts_buf_append_str(&b, ")");
    return ts_buf_steal(&b, NULL);
}
