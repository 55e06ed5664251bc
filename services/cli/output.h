/* output.h: what the CLI prints on stdout: aligned tables, single records as
 * "field  value" lines, or (--json) the API's JSON as it came. */
#ifndef TESSERA_CLI_OUTPUT_H
#define TESSERA_CLI_OUTPUT_H

#include <jansson.h>
#include <stdbool.h>

typedef enum out_kind { OUT_TEXT = 0, OUT_TIME } out_kind;

typedef struct out_column {
    const char *header; /* "ACCESS KEY" */
    const char *key;    /* JSON member of each row: "access_key" */
    out_kind kind;      /* OUT_TIME: "2026-01-02 03:04:05" from ISO-8601 */
} out_column;

/* Pretty-printed JSON (2-space indent) and a newline; "null" for NULL. */
void out_json(const json_t *v);

/* A table: a header row, then one row per object of items. cols ends with a
 * {NULL} entry. Values: strings as they are, numbers, true/false, "-" for
 * null or absent, objects as k=v,k=v and arrays comma-joined. */
void out_table(const out_column *cols, const json_t *items);

/* One object as aligned "field  value" lines, in the object's order; members
 * named in hide (NULL-terminated, may be NULL) are left out. */
void out_record(const json_t *obj, const char *const *hide);

/* A value as table text (heap). */
char *out_text(const json_t *v, out_kind kind);

#endif
