/* gql_types.c: a request's errors and the schema lookups (gql_types.h). */
#include "gql_types.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void *gql_user(const gql_exec *ex)
{
    return ex->user;
}

/* ---- errors --------------------------------------------------------------- */

static void _add_error(gql_exec *ex, unsigned line, unsigned col, const json_t *path,
                       const char *fmt, va_list ap)
{
    if (json_array_size(ex->errors) >= GQL_MAX_ERRORS) return;
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    json_t *e = json_pack("{s:s}", "message", msg);
    if (line)
        json_object_set_new(
            e, "locations",
            json_pack("[{s:i,s:i}]", "line", (json_int_t)line, "column", (json_int_t)col));
    if (path) json_object_set_new(e, "path", json_deep_copy(path));
    json_array_append_new(ex->errors, e);
}

void gqlx_error_at(gql_exec *ex, unsigned line, unsigned col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    _add_error(ex, line, col, NULL, fmt, ap);
    va_end(ap);
}

void gql_error(gql_exec *ex, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    _add_error(ex, ex->cur ? ex->cur->line : 0, ex->cur ? ex->cur->col : 0, ex->path, fmt, ap);
    va_end(ap);
}

/* ---- schema lookups ------------------------------------------------------- */

const gql_field_def *gqlx_field(const gql_object *t, const char *name)
{
    for (const gql_field_def *f = t->fields; f->name; f++)
        if (strcmp(f->name, name) == 0) return f;
    return NULL;
}

const gql_root_field *gqlx_root_field(const gql_root_field *rf, const char *name)
{
    for (; rf && rf->name; rf++)
        if (strcmp(rf->name, name) == 0) return rf;
    return NULL;
}

const char *gqlx_op_type_name(const gql_op *op)
{
    return op->kind == GQL_OP_MUTATION ? "Mutation" : "Query";
}

const gql_root_field *gqlx_op_roots(const gql_exec *ex)
{
    return ex->op->kind == GQL_OP_MUTATION ? ex->schema->mutation : ex->schema->query;
}
