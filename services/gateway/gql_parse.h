/* gql_parse.h: GraphQL request documents (the executable part of the
 * October 2021 specification: operations and fragment definitions; no type
 * system definitions) parsed into a tree, for /admin/graphql and /admin/gql
 * (graphql.h). Written by hand because Debian has no C library for GraphQL;
 * it is small, fuzzed (fuzz/fuzz_gql.c) and bounded: a document over
 * lim->max_bytes, nested deeper than lim->max_depth (selection sets and
 * values together) or with more than lim->max_nodes nodes (selections,
 * arguments, values, variable definitions, directives, type references) is
 * refused before anything is executed, so a hostile query costs at most a
 * bounded parse (and its recursion, bounded by the depth, cannot exhaust the
 * stack).
 *
 * Everything a document holds lives in one arena freed by gql_doc_free;
 * names and strings are NUL-terminated copies (a string's \u0000 is refused,
 * so strlen is its length). Lists keep the source order through `next`. */
#ifndef GATEWAY_GQL_PARSE_H
#define GATEWAY_GQL_PARSE_H

#include "libcommon/common.h"

#include <stddef.h>

typedef struct gql_limits {
    size_t max_bytes;   /* the source */
    unsigned max_depth; /* nesting of selection sets, list and object values
                         * and list types; at most 256 whatever is asked */
    unsigned max_nodes; /* selections + arguments + values + ... */
} gql_limits;

/* Defaults: 64 KiB, depth 16, 10,000 nodes. */
extern const gql_limits gql_default_limits;

typedef enum gql_value_kind {
    GQL_V_NULL,
    GQL_V_INT,    /* text: the literal as written ("-12") */
    GQL_V_FLOAT,  /* text: the literal as written ("1.5e3") */
    GQL_V_STRING, /* text: the decoded string (UTF-8); block strings too,
                   * after their indentation rule */
    GQL_V_BOOL,   /* boolean */
    GQL_V_ENUM,   /* text: the name */
    GQL_V_VAR,    /* text: the variable's name, without "$" */
    GQL_V_LIST,   /* items */
    GQL_V_OBJECT, /* items, each with its field name in `name` */
} gql_value_kind;

typedef struct gql_value gql_value;
struct gql_value {
    gql_value_kind kind;
    const char *text;
    bool boolean;
    gql_value *items; /* LIST, OBJECT: the first item */
    const char *name; /* an OBJECT's item: its field name; NULL otherwise */
    gql_value *next;  /* the next item of the enclosing LIST or OBJECT */
};

typedef struct gql_arg gql_arg;
struct gql_arg {
    const char *name;
    gql_value *value;
    unsigned line, col;
    gql_arg *next;
};

typedef struct gql_directive gql_directive;
struct gql_directive {
    const char *name; /* without "@" */
    gql_arg *args;
    unsigned line, col;
    gql_directive *next;
};

typedef enum gql_sel_kind {
    GQL_SEL_FIELD,  /* alias?: name(args) @directives { sels }? */
    GQL_SEL_SPREAD, /* ...name @directives: name is the fragment's */
    GQL_SEL_INLINE, /* ... on type_cond? @directives { sels } */
} gql_sel_kind;

typedef struct gql_sel gql_sel;
struct gql_sel {
    gql_sel_kind kind;
    const char *alias;     /* FIELD: or NULL */
    const char *name;      /* FIELD: the field; SPREAD: the fragment */
    const char *type_cond; /* INLINE: or NULL (no "on") */
    gql_arg *args;         /* FIELD */
    gql_directive *directives;
    gql_sel *sels;      /* FIELD: its selection set or NULL; INLINE: never NULL */
    unsigned line, col; /* where it starts (1-based, as GraphQL errors say) */
    gql_sel *next;
};

/* A variable's declared type: [Int!]! is list(non_null) with of = Int!. */
typedef struct gql_type gql_type;
struct gql_type {
    const char *name; /* a named type; NULL for a list */
    gql_type *of;     /* a list's item type */
    bool non_null;
};

typedef struct gql_vardef gql_vardef;
struct gql_vardef {
    const char *name; /* without "$" */
    gql_type *type;
    gql_value *def; /* the default, or NULL; never contains a GQL_V_VAR */
    unsigned line, col;
    gql_vardef *next;
};

typedef enum gql_op_kind {
    GQL_OP_QUERY,
    GQL_OP_MUTATION,
    GQL_OP_SUBSCRIPTION,
} gql_op_kind;

typedef struct gql_op gql_op;
struct gql_op {
    gql_op_kind kind; /* a bare "{ ... }" is a query */
    const char *name; /* or NULL */
    gql_vardef *vars;
    gql_directive *directives;
    gql_sel *sels; /* never NULL */
    unsigned line, col;
    gql_op *next;
};

typedef struct gql_frag gql_frag;
struct gql_frag {
    const char *name;
    const char *type_cond; /* "fragment F on T": T */
    gql_directive *directives;
    gql_sel *sels;
    unsigned line, col;
    gql_frag *next;
};

typedef struct gql_doc {
    gql_op *ops;     /* at least one */
    gql_frag *frags; /* names distinct */
    void *arena;     /* owned; gql_doc_free */
} gql_doc;

/* A syntax error or a limit, with where it was found (0, 0 when not
 * tied to a place, as a size over the limit; the column counts characters,
 * not bytes). The messages are graphql-js's where it has one. */
typedef struct gql_parse_error {
    char msg[256]; /* "Syntax Error: Expected Name, found \"}\"." */
    unsigned line, col;
} gql_parse_error;

/* Parse src (len bytes; need not be NUL-terminated; lim NULL: the defaults).
 * True with *out (gql_doc_free it). False with *err on a syntax error, on
 * invalid UTF-8 or a control character outside the allowed whitespace, a
 * document without an operation, two fragments of one name, or any limit
 * exceeded. Only syntax and these are checked: names of fields, types and
 * fragments used are the executor's concern (graphql.h). */
bool gql_parse(const char *src, size_t len, const gql_limits *lim, gql_doc **out,
               gql_parse_error *err) TS_MUST_CHECK;
void gql_doc_free(gql_doc *doc);

/* The fragment of that name, or NULL. */
const gql_frag *gql_doc_fragment(const gql_doc *doc, const char *name);

#endif
