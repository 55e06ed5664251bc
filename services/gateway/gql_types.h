/* gql_types.h: what the GraphQL executor (gql_exec.h), its validator
 * (gql_validate.h) and the resolvers share: the tables a schema is written
 * in (object types whose fields are read from JSON, root fields with typed
 * arguments and a resolver), the resolvers' calls (their context, a field's
 * error), and the state of one request, whose members only the executor and
 * the validator touch. */
#ifndef GATEWAY_GQL_TYPES_H
#define GATEWAY_GQL_TYPES_H

#include "gql_parse.h"

#include <jansson.h>

#define GQL_MAX_ERRORS 100

typedef struct gql_exec gql_exec;
typedef struct gql_object gql_object;

/* The input types of arguments and variables. */
typedef enum gql_scalar {
    GQL_STRING, /* also accepts ID */
    GQL_INT,    /* 32-bit, as GraphQL's Int */
    GQL_BIGINT, /* Backend.AI's BigInt: an integer or its decimal text */
    GQL_FLOAT,
    GQL_BOOLEAN,
    GQL_UUID,        /* text in UUID form */
    GQL_JSONSTRING,  /* text holding JSON (Backend.AI's JSONString); an object is taken too */
    GQL_INPUT,       /* an input object: a JSON object, checked by the resolver */
    GQL_STRING_LIST, /* [String] */
} gql_scalar;

typedef struct gql_arg_def {
    const char *name;
    gql_scalar type;
    bool required;
} gql_arg_def;

/* A computed field: a new reference (NULL: null) from the parent's source
 * object. */
typedef json_t *(*gql_getter)(gql_exec *ex, const json_t *src);

typedef enum gql_leaf {
    GQL_AS_IS,      /* the source's value (null when absent) */
    GQL_AS_JSONSTR, /* the value serialized as a JSON text (JSONString) */
    GQL_AS_STRING,  /* numbers and booleans as text */
} gql_leaf;

typedef struct gql_field_def {
    const char *name;
    const gql_object *type; /* NULL: a leaf (scalar or JSONString) */
    bool list;              /* a list of type */
    const char *key;        /* the source's member (NULL: name) */
    gql_getter get;         /* instead of key */
    gql_leaf leaf;
} gql_field_def;

struct gql_object {
    const char *name;
    const gql_field_def *fields; /* ends with {NULL} */
};

/* A root field: the resolver returns the source value (a new reference;
 * for a list field, a JSON array of sources), or NULL after gql_error(). */
typedef json_t *(*gql_resolver)(gql_exec *ex, const json_t *args);

typedef struct gql_root_field {
    const char *name;
    const gql_arg_def *args; /* ends with {NULL} */
    const gql_object *type;  /* NULL: a leaf */
    bool list;
    gql_resolver resolve;
} gql_root_field;

typedef struct gql_schema {
    const gql_root_field *query;    /* ends with {NULL} */
    const gql_root_field *mutation; /* ends with {NULL} */
    const char *const *input_types; /* names of input object types; NULL-ended */
} gql_schema;

typedef struct gql_request {
    const char *query;
    size_t query_len;
    const json_t *variables;    /* an object or NULL */
    const char *operation_name; /* or NULL */
} gql_request;

/* For resolvers: their context; and an error for the field being resolved
 * (its path and location are added). */
void *gql_user(const gql_exec *ex);
void gql_error(gql_exec *ex, const char *fmt, ...) TS_PRINTF(2, 3);

/* Writing the tables (gql_schema.c, gql_query.c, gql_mutation_root.c):
 * fields (a leaf, a JSONString leaf, an object, a list of objects, a
 * computed one, the end) and arguments (optional, required, the end). */
#define GQL_F(n)                                                                                   \
    {                                                                                              \
        .name = n                                                                                  \
    }
#define GQL_J(n)                                                                                   \
    {                                                                                              \
        .name = n, .leaf = GQL_AS_JSONSTR                                                          \
    }
#define GQL_OBJ(n, t)                                                                              \
    {                                                                                              \
        .name = n, .type = &(t)                                                                    \
    }
#define GQL_LIST(n, t)                                                                             \
    {                                                                                              \
        .name = n, .type = &(t), .list = true                                                      \
    }
#define GQL_GET(n, g)                                                                              \
    {                                                                                              \
        .name = n, .get = (g)                                                                      \
    }
#define GQL_FIELDS_END                                                                             \
    {                                                                                              \
        .name = NULL                                                                               \
    }
#define GQL_OPT(n, t)                                                                              \
    {                                                                                              \
        n, t, false                                                                                \
    }
#define GQL_REQ(n, t)                                                                              \
    {                                                                                              \
        n, t, true                                                                                 \
    }
#define GQL_ARGS_END                                                                               \
    {                                                                                              \
        NULL, 0, false                                                                             \
    }

/* ---- the executor's and the validator's own ------------------------------- */

#define GQL_MAX_FRAG_NEST 32

struct gql_exec {
    const gql_schema *schema;
    const gql_doc *doc;
    const gql_op *op;
    json_t *vars;   /* coerced variable values */
    json_t *errors; /* array */
    json_t *path;   /* the path of the field being completed */
    const gql_sel *cur;
    void *user;
    unsigned long fields;
    unsigned long visits;
    bool over_budget;
    /* validation bookkeeping */
    const char *frag_stack[GQL_MAX_FRAG_NEST];
    unsigned frag_depth;
    const char **used_frags;
    size_t n_used_frags;
    const char **used_vars;
    size_t n_used_vars;
};

/* An error at line:col (0: none) without a path. */
void gqlx_error_at(gql_exec *ex, unsigned line, unsigned col, const char *fmt, ...) TS_PRINTF(4, 5);

const gql_field_def *gqlx_field(const gql_object *t, const char *name);
const gql_root_field *gqlx_root_field(const gql_root_field *rf, const char *name);
/* "Query" or "Mutation", and its root fields. */
const char *gqlx_op_type_name(const gql_op *op);
const gql_root_field *gqlx_op_roots(const gql_exec *ex);

#endif
