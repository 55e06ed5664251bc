/* sql_row.h: an INSERT built from named columns. Each column is set by name
 * with its value and, where it needs one, an SQL expression around its
 * parameter; the statement's text and its parameter array come from the same
 * list in one place, so adding a column cannot shift the others. The row
 * keeps pointers to the names, expressions and values it is given: they must
 * outlive the statement's run. */
#ifndef REGISTRY_SQL_ROW_H
#define REGISTRY_SQL_ROW_H

#include "libcommon/common.h"

#define SQL_ROW_MAX 48

typedef struct sql_row {
    int n;
    struct {
        const char *name;  /* the column */
        const char *expr;  /* its value's SQL, '?' standing for the parameter; NULL: "?" */
        const char *value; /* the parameter's text; NULL: SQL NULL */
    } col[SQL_ROW_MAX];
} sql_row;

/* Column name gets value through expr (e.g. "?::uuid",
 * "to_timestamp(?::bigint / 1000.0)"; NULL: the parameter as it is). A
 * column set twice, or more than SQL_ROW_MAX columns, is a broken invariant
 * (it aborts). */
void sql_row_set(sql_row *r, const char *name, const char *expr, const char *value);

/* "INSERT INTO table (names...) VALUES (exprs with $1...)" (malloc'd); params
 * (r->n entries) gets the values in the same order. */
char *sql_row_insert(const sql_row *r, const char *table, const char **params);

#endif
