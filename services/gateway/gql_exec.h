/* gql_exec.h: runs a parsed GraphQL request (gql_parse.h) against a schema
 * described by tables: object types whose fields are read from JSON
 * (whatever a root field's resolver fetched), and root fields with typed
 * arguments and a resolver. Schema-agnostic; Backend.AI's schema is
 * gql_schema.h.
 *
 * What it does, in the specification's order:
 *  - picks the operation (operationName, or the only one);
 *  - validates the whole document against the schema before anything runs:
 *    known fields and arguments, required arguments, leaf fields without and
 *    object fields with a selection set, known fragments and type conditions,
 *    no fragment cycles, every fragment and variable used and defined;
 *  - coerces the variables (declared types: the schema's scalars, lists,
 *    non-null, input objects as JSON objects; defaults);
 *  - executes: @skip / @include, aliases, fragments and inline fragments
 *    (a type condition applies when it names the object's type), __typename,
 *    lists and nulls; a resolver's error nulls its field and adds an entry
 *    to `errors` with message, locations and path.
 * Introspection (__schema, __type) is refused, as Backend.AI refuses it by
 * default. Cost is bounded twice: the parser's limits, and GQL_MAX_RESULT_FIELDS
 * completed fields per request (fragments spread many times cannot blow up). */
#ifndef GATEWAY_GQL_EXEC_H
#define GATEWAY_GQL_EXEC_H

#include "gql_parse.h"

#include <jansson.h>

#define GQL_MAX_RESULT_FIELDS 200000
#define GQL_MAX_ERRORS 100

typedef struct gql_exec gql_exec;
typedef struct gql_object gql_object;

/* The input types of arguments and variables. */
typedef enum gql_scalar {
    GQL_STRING,  /* also accepts ID */
    GQL_INT,     /* 32-bit, as GraphQL's Int */
    GQL_BIGINT,  /* Backend.AI's BigInt: an integer or its decimal text */
    GQL_FLOAT,
    GQL_BOOLEAN,
    GQL_UUID,    /* text in UUID form */
    GQL_JSONSTRING, /* text holding JSON (Backend.AI's JSONString); an object is taken too */
    GQL_INPUT,   /* an input object: a JSON object, checked by the resolver */
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
    const gql_object *const *types; /* every object type, for type conditions; NULL-ended */
    const char *const *input_types; /* names of input object types; NULL-ended */
} gql_schema;

typedef struct gql_request {
    const char *query;
    size_t query_len;
    const json_t *variables;    /* an object or NULL */
    const char *operation_name; /* or NULL */
} gql_request;

/* Run req against schema; user is the resolvers' context (gql_user). The
 * answer, a new reference: {"data": ..., "errors": [...]} as GraphQL's
 * response format (no "errors" member when there were none; "data" null
 * when the request did not validate). *valid says whether execution
 * started (false: a parse, validation or variable error). */
json_t *gql_execute(const gql_schema *schema, const gql_request *req, void *user, bool *valid);

/* For resolvers: their context; and an error for the field being resolved
 * (its path and location are added). */
void *gql_user(const gql_exec *ex);
void gql_error(gql_exec *ex, const char *fmt, ...) TS_PRINTF(2, 3);

#endif
