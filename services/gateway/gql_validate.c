/* gql_validate.c: a GraphQL operation checked against the table schema
 * before anything runs (gql_exec.h's list; the rules are graphql-js's, their
 * messages too). */
#include "gql_validate.h"

#include <stdlib.h>
#include <string.h>

/* Validation visits at most this many selections (fragments spread in
 * fragments multiply them). */
#define VALIDATE_BUDGET 100000

/* Whether t or an object type reachable from it is named name (seen: the
 * types visited, n of them). */
static bool _reaches(const gql_object *t, const char *name, const gql_object **seen, size_t *n)
{
    for (size_t i = 0; i < *n; i++)
        if (seen[i] == t) return false;
    if (*n == 256) return false;
    seen[(*n)++] = t;
    if (strcmp(t->name, name) == 0) return true;
    for (const gql_field_def *f = t->fields; f->name; f++)
        if (f->type && _reaches(f->type, name, seen, n)) return true;
    return false;
}

/* A type of the schema: the roots', or one their fields reach. */
static bool _known_type(const gql_schema *s, const char *name)
{
    if (strcmp(name, "Query") == 0 || strcmp(name, "Mutation") == 0) return true;
    const gql_object *seen[256];
    size_t n = 0;
    const gql_root_field *const roots[] = {s->query, s->mutation};
    for (size_t r = 0; r < 2; r++)
        for (const gql_root_field *f = roots[r]; f && f->name; f++)
            if (f->type && _reaches(f->type, name, seen, &n)) return true;
    return false;
}

static const char *const SCALARS[] = {"String", "Int",    "Float",    "Boolean",    "ID",
                                      "UUID",   "BigInt", "DateTime", "JSONString", NULL};

static bool _is_scalar_name(const char *name)
{
    for (const char *const *s = SCALARS; *s; s++)
        if (strcmp(*s, name) == 0) return true;
    return false;
}

static bool _is_input_name(const gql_schema *s, const char *name)
{
    for (const char *const *t = s->input_types; t && *t; t++)
        if (strcmp(*t, name) == 0) return true;
    return false;
}

/* ---- validation ----------------------------------------------------------- */

static void _mark(const char ***list, size_t *n, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*list)[i], name) == 0) return;
    const char **grown = realloc(*list, (*n + 1) * sizeof(**list));
    if (!grown) ts_panic("out of memory");
    *list = grown;
    (*list)[(*n)++] = name;
}

static void _vars_in_value(gql_exec *ex, const gql_value *v, unsigned line, unsigned col)
{
    if (!v) return;
    if (v->kind == GQL_V_VAR) {
        bool defined = false;
        for (const gql_vardef *d = ex->op->vars; d; d = d->next)
            if (strcmp(d->name, v->text) == 0) defined = true;
        if (!defined)
            gqlx_error_at(ex, line, col, "Variable \"$%s\" is not defined%s%s%s.", v->text,
                          ex->op->name ? " by operation \"" : "", ex->op->name ? ex->op->name : "",
                          ex->op->name ? "\"" : "");
        _mark(&ex->used_vars, &ex->n_used_vars, v->text);
    }
    for (const gql_value *i = v->items; i; i = i->next)
        _vars_in_value(ex, i, line, col);
}

static void _validate_directives(gql_exec *ex, const gql_directive *d)
{
    for (; d; d = d->next) {
        bool known = strcmp(d->name, "skip") == 0 || strcmp(d->name, "include") == 0;
        if (!known) {
            gqlx_error_at(ex, d->line, d->col, "Unknown directive \"@%s\".", d->name);
            continue;
        }
        bool has_if = false;
        for (const gql_arg *a = d->args; a; a = a->next) {
            _vars_in_value(ex, a->value, a->line, a->col);
            if (strcmp(a->name, "if") == 0)
                has_if = true;
            else
                gqlx_error_at(ex, a->line, a->col, "Unknown argument \"%s\" on directive \"@%s\".",
                              a->name, d->name);
        }
        if (!has_if)
            gqlx_error_at(
                ex, d->line, d->col,
                "Directive \"@%s\" argument \"if\" of type \"Boolean!\" is required, but it "
                "was not provided.",
                d->name);
    }
}

static void _validate_sels(gql_exec *ex, const gql_sel *sels, const gql_object *t);

static void _validate_args(gql_exec *ex, const gql_sel *s, const gql_arg_def *defs,
                           const char *owner)
{
    for (const gql_arg *a = s->args; a; a = a->next) {
        _vars_in_value(ex, a->value, a->line, a->col);
        const gql_arg_def *d = defs;
        while (d && d->name && strcmp(d->name, a->name) != 0)
            d++;
        if (!d || !d->name)
            gqlx_error_at(ex, a->line, a->col, "Unknown argument \"%s\" on field \"%s.%s\".",
                          a->name, owner, s->name);
        for (const gql_arg *b = a->next; b; b = b->next)
            if (strcmp(a->name, b->name) == 0)
                gqlx_error_at(ex, b->line, b->col, "There can be only one argument named \"%s\".",
                              a->name);
    }
    for (const gql_arg_def *d = defs; d && d->name; d++) {
        if (!d->required) continue;
        const gql_arg *a = s->args;
        while (a && strcmp(a->name, d->name) != 0)
            a = a->next;
        if (!a)
            gqlx_error_at(ex, s->line, s->col,
                          "Field \"%s\" argument \"%s\" is required, but it was not provided.",
                          s->name, d->name);
    }
}

/* One field of type t (NULL: the operation's root). */
static void _validate_field(gql_exec *ex, const gql_sel *s, const gql_object *t)
{
    const char *owner = t ? t->name : gqlx_op_type_name(ex->op);
    if (strcmp(s->name, "__typename") == 0) {
        if (s->sels)
            gqlx_error_at(ex, s->line, s->col, "Field \"__typename\" must not have a selection.");
        if (s->args)
            gqlx_error_at(ex, s->args->line, s->args->col,
                          "Unknown argument \"%s\" on field \"%s.__typename\".", s->args->name,
                          owner);
        return;
    }
    if (strcmp(s->name, "__schema") == 0 || strcmp(s->name, "__type") == 0) {
        gqlx_error_at(ex, s->line, s->col,
                      "GraphQL introspection is not allowed, but the query contained __schema or "
                      "__type.");
        return;
    }
    const gql_object *ft;
    if (!t) {
        const gql_root_field *rf = gqlx_root_field(gqlx_op_roots(ex), s->name);
        if (!rf) {
            gqlx_error_at(ex, s->line, s->col, "Cannot query field \"%s\" on type \"%s\".", s->name,
                          owner);
            return;
        }
        _validate_args(ex, s, rf->args, owner);
        ft = rf->type;
    } else {
        const gql_field_def *fd = gqlx_field(t, s->name);
        if (!fd) {
            gqlx_error_at(ex, s->line, s->col, "Cannot query field \"%s\" on type \"%s\".", s->name,
                          owner);
            return;
        }
        _validate_args(ex, s, NULL, owner);
        ft = fd->type;
    }
    if (ft && !s->sels)
        gqlx_error_at(ex, s->line, s->col,
                      "Field \"%s\" of type \"%s%s%s\" must have a selection of subfields. Did you "
                      "mean \"%s { ... }\"?",
                      s->name, "", ft->name, "", s->name);
    else if (!ft && s->sels)
        gqlx_error_at(ex, s->line, s->col,
                      "Field \"%s\" must not have a selection since its type has no subfields.",
                      s->name);
    else if (ft)
        _validate_sels(ex, s->sels, ft);
}

/* A type condition against the current type (t; NULL: the root). */
static bool _validate_cond(gql_exec *ex, const char *cond, const gql_object *t, unsigned line,
                           unsigned col, const char *frag)
{
    if (!cond) return true;
    if (!_known_type(ex->schema, cond)) {
        gqlx_error_at(ex, line, col, "Unknown type \"%s\".", cond);
        return false;
    }
    const char *here = t ? t->name : gqlx_op_type_name(ex->op);
    if (strcmp(cond, here) != 0) {
        if (frag)
            gqlx_error_at(
                ex, line, col,
                "Fragment \"%s\" cannot be spread here as objects of type \"%s\" can never "
                "be of type \"%s\".",
                frag, here, cond);
        else
            gqlx_error_at(
                ex, line, col,
                "Fragment cannot be spread here as objects of type \"%s\" can never be of "
                "type \"%s\".",
                here, cond);
        return false;
    }
    return true;
}

static void _validate_sels(gql_exec *ex, const gql_sel *sels, const gql_object *t)
{
    for (const gql_sel *s = sels; s; s = s->next) {
        if (++ex->visits > VALIDATE_BUDGET) {
            if (!ex->over_budget)
                gqlx_error_at(
                    ex, s->line, s->col,
                    "The query is too complex: more than %d selections with its fragments "
                    "spread.",
                    VALIDATE_BUDGET);
            ex->over_budget = true;
            return;
        }
        _validate_directives(ex, s->directives);
        switch (s->kind) {
        case GQL_SEL_FIELD:
            _validate_field(ex, s, t);
            break;
        case GQL_SEL_INLINE:
            if (_validate_cond(ex, s->type_cond, t, s->line, s->col, NULL))
                _validate_sels(ex, s->sels, t);
            break;
        case GQL_SEL_SPREAD: {
            const gql_frag *f = gql_doc_fragment(ex->doc, s->name);
            if (!f) {
                gqlx_error_at(ex, s->line, s->col, "Unknown fragment \"%s\".", s->name);
                break;
            }
            _mark(&ex->used_frags, &ex->n_used_frags, f->name);
            bool cycle = false;
            for (unsigned i = 0; i < ex->frag_depth; i++)
                if (strcmp(ex->frag_stack[i], f->name) == 0) cycle = true;
            if (cycle || ex->frag_depth >= GQL_MAX_FRAG_NEST) {
                gqlx_error_at(ex, s->line, s->col, "Cannot spread fragment \"%s\" within itself.",
                              f->name);
                break;
            }
            if (!_validate_cond(ex, f->type_cond, t, s->line, s->col, f->name)) break;
            _validate_directives(ex, f->directives);
            ex->frag_stack[ex->frag_depth++] = f->name;
            _validate_sels(ex, f->sels, t);
            ex->frag_depth--;
            break;
        }
        }
        if (ex->over_budget) return;
    }
}

bool gqlx_validate(gql_exec *ex)
{
    const gql_op *op = ex->op;
    if (op->kind == GQL_OP_SUBSCRIPTION) {
        gqlx_error_at(ex, op->line, op->col, "Subscriptions are not served here.");
        return false;
    }
    if (op->kind == GQL_OP_MUTATION && !ex->schema->mutation) {
        gqlx_error_at(ex, op->line, op->col, "Schema is not configured for mutations.");
        return false;
    }
    _validate_directives(ex, op->directives);
    for (const gql_vardef *d = op->vars; d; d = d->next) {
        for (const gql_vardef *e = d->next; e; e = e->next)
            if (strcmp(d->name, e->name) == 0)
                gqlx_error_at(ex, e->line, e->col, "There can be only one variable named \"$%s\".",
                              d->name);
        const gql_type *ty = d->type;
        while (ty->of)
            ty = ty->of;
        if (!_is_scalar_name(ty->name) && !_is_input_name(ex->schema, ty->name))
            gqlx_error_at(ex, d->line, d->col, "Unknown type \"%s\".", ty->name);
    }
    _validate_sels(ex, op->sels, NULL);
    /* Every fragment of the document must be used by some operation; only
     * this one is validated, so count the others' uses as well. */
    for (const gql_op *o = ex->doc->ops; o; o = o->next) {
        if (o == op) continue;
        const gql_op *keep = ex->op;
        json_t *errs = ex->errors;
        ex->errors = json_array(); /* the other operations' own errors don't count */
        ex->op = o;
        _validate_sels(ex, o->sels, NULL);
        json_decref(ex->errors);
        ex->errors = errs;
        ex->op = keep;
    }
    for (const gql_frag *f = ex->doc->frags; f; f = f->next) {
        bool used = false;
        for (size_t i = 0; i < ex->n_used_frags; i++)
            if (strcmp(ex->used_frags[i], f->name) == 0) used = true;
        if (!used) gqlx_error_at(ex, f->line, f->col, "Fragment \"%s\" is never used.", f->name);
    }
    for (const gql_vardef *d = op->vars; d; d = d->next) {
        bool used = false;
        for (size_t i = 0; i < ex->n_used_vars; i++)
            if (strcmp(ex->used_vars[i], d->name) == 0) used = true;
        if (!used)
            gqlx_error_at(ex, d->line, d->col, "Variable \"$%s\" is never used%s%s%s.", d->name,
                          op->name ? " in operation \"" : "", op->name ? op->name : "",
                          op->name ? "\"" : "");
    }
    return json_array_size(ex->errors) == 0;
}
