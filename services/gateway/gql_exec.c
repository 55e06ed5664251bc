/* gql_exec.c: coercion and execution of GraphQL requests against a table
 * schema (gql_exec.h); validation is gql_validate.c. */
#include "gql_exec.h"
#include "gql_validate.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- values --------------------------------------------------------------- */

/* A literal (vars: coerced variables, NULL inside defaults). Absent
 * variables give NULL (the argument counts as not given). */
static json_t *_literal(const gql_value *v, const json_t *vars)
{
    switch (v->kind) {
    case GQL_V_NULL:
        return json_null();
    case GQL_V_INT: {
        errno = 0;
        char *end;
        long long n = strtoll(v->text, &end, 10);
        if (errno || *end) return json_real(strtod(v->text, NULL)); /* out of range */
        return json_integer(n);
    }
    case GQL_V_FLOAT:
        return json_real(strtod(v->text, NULL));
    case GQL_V_STRING:
    case GQL_V_ENUM:
        return json_string(v->text);
    case GQL_V_BOOL:
        return json_boolean(v->boolean);
    case GQL_V_VAR: {
        json_t *x = vars ? json_object_get(vars, v->text) : NULL;
        return x ? json_incref(x) : NULL;
    }
    case GQL_V_LIST: {
        json_t *a = json_array();
        for (const gql_value *i = v->items; i; i = i->next) {
            json_t *x = _literal(i, vars);
            json_array_append_new(a, x ? x : json_null());
        }
        return a;
    }
    case GQL_V_OBJECT: {
        json_t *o = json_object();
        for (const gql_value *i = v->items; i; i = i->next) {
            json_t *x = _literal(i, vars);
            if (x) json_object_set_new(o, i->name, x);
        }
        return o;
    }
    }
    return json_null();
}

/* Check (and normalize) *v for type; NULL or an error message. */
static const char *_coerce(gql_scalar type, json_t **v)
{
    json_t *x = *v;
    if (json_is_null(x)) return NULL;
    switch (type) {
    case GQL_STRING:
        if (json_is_integer(x)) { /* ID accepts integers */
            char b[32];
            snprintf(b, sizeof(b), "%lld", (long long)json_integer_value(x));
            json_decref(x);
            *v = json_string(b);
            return NULL;
        }
        return json_is_string(x) ? NULL : "String cannot represent a non string value";
    case GQL_INT:
        if (!json_is_integer(x)) return "Int cannot represent non-integer value";
        if (json_integer_value(x) < INT32_MIN || json_integer_value(x) > INT32_MAX)
            return "Int cannot represent non 32-bit signed integer value";
        return NULL;
    case GQL_BIGINT:
        if (json_is_integer(x)) return NULL;
        if (json_is_string(x)) {
            const char *s = json_string_value(x);
            char *end;
            errno = 0;
            long long n = strtoll(s, &end, 10);
            if (!*s || *end || errno) return "BigInt cannot represent this value";
            json_decref(x);
            *v = json_integer(n);
            return NULL;
        }
        return "BigInt cannot represent this value";
    case GQL_FLOAT:
        return json_is_number(x) ? NULL : "Float cannot represent non numeric value";
    case GQL_BOOLEAN:
        return json_is_boolean(x) ? NULL : "Boolean cannot represent a non boolean value";
    case GQL_UUID:
        return json_is_string(x) && ts_uuid_valid(json_string_value(x)) ? NULL : "not a valid UUID";
    case GQL_JSONSTRING:
        if (json_is_string(x)) {
            json_t *p = json_loads(json_string_value(x), JSON_DECODE_ANY, NULL);
            if (!p) return "JSONString holds invalid JSON";
            json_decref(x);
            *v = p;
            return NULL;
        }
        return json_is_object(x) || json_is_array(x) ? NULL : "JSONString cannot represent it";
    case GQL_INPUT:
        return json_is_object(x) ? NULL : "an input object must be an object";
    case GQL_STRING_LIST:
        if (json_is_string(x)) { /* a single item is a list of one */
            json_t *a = json_array();
            json_array_append_new(a, x);
            *v = a;
            return NULL;
        }
        if (!json_is_array(x)) return "[String] cannot represent a non list value";
        size_t i;
        json_t *it;
        json_array_foreach(x, i, it) if (!json_is_string(it)) return "[String] holds a non string";
        return NULL;
    }
    return "unknown type";
}

/* A variable's value against its declared type; false with an error. */
static bool _coerce_var(gql_exec *ex, const gql_vardef *d, const gql_type *ty, json_t **v,
                        const char *tname)
{
    if (json_is_null(*v)) {
        if (ty->non_null) {
            gqlx_error_at(ex, d->line, d->col,
                          "Variable \"$%s\" of non-null type \"%s\" must not be null.", d->name,
                          tname);
            return false;
        }
        return true;
    }
    if (!ty->name) {
        if (!json_is_array(*v)) { /* a single value is a list of one */
            json_t *a = json_array();
            json_array_append_new(a, *v);
            *v = a;
        }
        for (size_t i = 0; i < json_array_size(*v); i++) {
            json_t *it = json_incref(json_array_get(*v, i));
            if (!_coerce_var(ex, d, ty->of, &it, tname)) {
                json_decref(it);
                return false;
            }
            json_array_set_new(*v, i, it);
        }
        return true;
    }
    static const struct {
        const char *name;
        gql_scalar type;
    } MAP[] = {{"String", GQL_STRING}, {"ID", GQL_STRING},       {"Int", GQL_INT},
               {"BigInt", GQL_BIGINT}, {"Float", GQL_FLOAT},     {"Boolean", GQL_BOOLEAN},
               {"UUID", GQL_UUID},     {"DateTime", GQL_STRING}, {"JSONString", GQL_STRING}};
    gql_scalar st = GQL_INPUT;
    for (size_t i = 0; i < sizeof(MAP) / sizeof(MAP[0]); i++)
        if (strcmp(MAP[i].name, ty->name) == 0) st = MAP[i].type;
    const char *why = _coerce(st, v);
    if (why) {
        char *got = json_dumps(*v, JSON_ENCODE_ANY | JSON_COMPACT);
        gqlx_error_at(ex, d->line, d->col, "Variable \"$%s\" got invalid value %.80s; %s.", d->name,
                      got ? got : "?", why);
        free(got);
        return false;
    }
    return true;
}

static void _type_text(const gql_type *t, char *out, size_t n)
{
    if (t->name)
        snprintf(out, n, "%s%s", t->name, t->non_null ? "!" : "");
    else {
        char inner[96];
        _type_text(t->of, inner, sizeof(inner));
        snprintf(out, n, "[%s]%s", inner, t->non_null ? "!" : "");
    }
}

static bool _coerce_vars(gql_exec *ex, const json_t *given)
{
    bool ok = true;
    for (const gql_vardef *d = ex->op->vars; d; d = d->next) {
        char tname[128];
        _type_text(d->type, tname, sizeof(tname));
        json_t *v = given ? json_object_get(given, d->name) : NULL;
        if (v)
            v = json_deep_copy(v);
        else if (d->def)
            v = _literal(d->def, NULL);
        if (!v) {
            if (d->type->non_null) {
                gqlx_error_at(ex, d->line, d->col,
                              "Variable \"$%s\" of required type \"%s\" was not provided.", d->name,
                              tname);
                ok = false;
            }
            continue;
        }
        if (!_coerce_var(ex, d, d->type, &v, tname)) {
            ok = false;
            json_decref(v);
            continue;
        }
        json_object_set_new(ex->vars, d->name, v);
    }
    return ok;
}

/* The arguments of a root field, as a JSON object; NULL after an error. */
static json_t *_args(gql_exec *ex, const gql_sel *s, const gql_root_field *rf)
{
    json_t *out = json_object();
    for (const gql_arg *a = s->args; a; a = a->next) {
        const gql_arg_def *d = rf->args;
        while (strcmp(d->name, a->name) != 0)
            d++; /* validated: it exists */
        json_t *v = _literal(a->value, ex->vars);
        if (!v) continue;
        if (json_is_null(v) && d->required) {
            gql_error(ex, "Argument \"%s\" of non-null type must not be null.", a->name);
            json_decref(v);
            json_decref(out);
            return NULL;
        }
        if (json_is_null(v)) { /* an explicit null of an optional argument: as if absent */
            json_decref(v);
            continue;
        }
        const char *why = _coerce(d->type, &v);
        if (why) {
            gql_error(ex, "Argument \"%s\" has an invalid value: %s.", a->name, why);
            json_decref(v);
            json_decref(out);
            return NULL;
        }
        json_object_set_new(out, a->name, v);
    }
    for (const gql_arg_def *d = rf->args; d && d->name; d++)
        if (d->required && !json_object_get(out, d->name)) {
            gql_error(ex, "Argument \"%s\" of required type was not provided.", d->name);
            json_decref(out);
            return NULL;
        }
    return out;
}

/* ---- execution ------------------------------------------------------------ */

/* Whether @skip / @include let s through. */
static bool _included(gql_exec *ex, const gql_directive *d)
{
    for (; d; d = d->next) {
        const gql_arg *a = d->args;
        while (a && strcmp(a->name, "if") != 0)
            a = a->next;
        json_t *v = a ? _literal(a->value, ex->vars) : NULL;
        bool on = v && json_is_true(v);
        json_decref(v);
        if (strcmp(d->name, "skip") == 0 && on) return false;
        if (strcmp(d->name, "include") == 0 && !on) return false;
    }
    return true;
}

/* The fields of a selection set, merged by response key. */
typedef struct collected {
    const char *key;
    const gql_sel **nodes;
    size_t n;
} collected;

typedef struct collection {
    collected *items;
    size_t n;
} collection;

static void _collect(gql_exec *ex, const gql_sel *sels, const char *type_name, collection *c,
                     unsigned depth)
{
    if (depth > GQL_MAX_FRAG_NEST) return;
    for (const gql_sel *s = sels; s; s = s->next) {
        if (!_included(ex, s->directives)) continue;
        if (s->kind == GQL_SEL_FIELD) {
            const char *key = s->alias ? s->alias : s->name;
            collected *it = NULL;
            for (size_t i = 0; i < c->n; i++)
                if (strcmp(c->items[i].key, key) == 0) it = &c->items[i];
            if (!it) {
                collected *grown = realloc(c->items, (c->n + 1) * sizeof(*grown));
                if (!grown) ts_panic("out of memory");
                c->items = grown;
                it = &c->items[c->n++];
                *it = (collected){.key = key};
            }
            const gql_sel **nodes = realloc(it->nodes, (it->n + 1) * sizeof(*nodes));
            if (!nodes) ts_panic("out of memory");
            it->nodes = nodes;
            it->nodes[it->n++] = s;
        } else if (s->kind == GQL_SEL_INLINE) {
            if (!s->type_cond || strcmp(s->type_cond, type_name) == 0)
                _collect(ex, s->sels, type_name, c, depth + 1);
        } else {
            const gql_frag *f = gql_doc_fragment(ex->doc, s->name);
            if (f && strcmp(f->type_cond, type_name) == 0 && _included(ex, f->directives))
                _collect(ex, f->sels, type_name, c, depth + 1);
        }
    }
}

static void _collection_free(collection *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->items[i].nodes);
    free(c->items);
}

static json_t *_complete_object(gql_exec *ex, const gql_object *t, const json_t *src,
                                const gql_sel *const *nodes, size_t n);

/* A field's value of type t (NULL: a leaf, by leaf) from v (borrowed). */
static json_t *_complete(gql_exec *ex, const gql_object *t, bool list, gql_leaf leaf,
                         const json_t *v, const gql_sel *const *nodes, size_t n)
{
    if (!v || json_is_null(v)) return json_null();
    if (list) {
        if (!json_is_array(v)) return json_null();
        json_t *out = json_array();
        size_t i;
        json_t *it;
        json_array_foreach(v, i, it)
        {
            json_array_append_new(ex->path, json_integer((json_int_t)i));
            json_array_append_new(out, _complete(ex, t, false, leaf, it, nodes, n));
            json_array_remove(ex->path, json_array_size(ex->path) - 1);
            if (ex->over_budget) break;
        }
        return out;
    }
    if (t) return json_is_object(v) ? _complete_object(ex, t, v, nodes, n) : json_null();
    switch (leaf) {
    case GQL_AS_JSONSTR: {
        char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        json_t *out = json_string(s ? s : "null");
        free(s);
        return out;
    }
    case GQL_AS_STRING:
        if (json_is_integer(v)) {
            char b[32];
            snprintf(b, sizeof(b), "%lld", (long long)json_integer_value(v));
            return json_string(b);
        }
        if (json_is_real(v)) {
            char b[64];
            snprintf(b, sizeof(b), "%.17g", json_real_value(v));
            return json_string(b);
        }
        if (json_is_boolean(v)) return json_string(json_is_true(v) ? "true" : "false");
        return json_deep_copy(v);
    case GQL_AS_IS:
        break;
    }
    return json_deep_copy(v);
}

static bool _spend(gql_exec *ex)
{
    if (++ex->fields <= GQL_MAX_RESULT_FIELDS) return true;
    if (!ex->over_budget)
        gql_error(ex, "The result is too large: more than %d fields.", GQL_MAX_RESULT_FIELDS);
    ex->over_budget = true;
    return false;
}

static json_t *_complete_object(gql_exec *ex, const gql_object *t, const json_t *src,
                                const gql_sel *const *nodes, size_t n)
{
    collection c = {0};
    for (size_t i = 0; i < n; i++)
        _collect(ex, nodes[i]->sels, t->name, &c, 0);
    json_t *out = json_object();
    for (size_t i = 0; i < c.n && !ex->over_budget; i++) {
        collected *it = &c.items[i];
        const gql_sel *s = it->nodes[0];
        if (!_spend(ex)) break;
        if (strcmp(s->name, "__typename") == 0) {
            json_object_set_new(out, it->key, json_string(t->name));
            continue;
        }
        const gql_field_def *fd = gqlx_field(t, s->name); /* validated */
        json_array_append_new(ex->path, json_string(it->key));
        const gql_sel *keep = ex->cur;
        ex->cur = s;
        json_t *owned = NULL;
        const json_t *v;
        if (fd->get)
            v = owned = fd->get(ex, src);
        else
            v = json_object_get(src, fd->key ? fd->key : fd->name);
        json_object_set_new(out, it->key,
                            _complete(ex, fd->type, fd->list, fd->leaf, v, it->nodes, it->n));
        json_decref(owned);
        ex->cur = keep;
        json_array_remove(ex->path, json_array_size(ex->path) - 1);
    }
    _collection_free(&c);
    return out;
}

static json_t *_execute_root(gql_exec *ex)
{
    collection c = {0};
    const char *root = gqlx_op_type_name(ex->op);
    _collect(ex, ex->op->sels, root, &c, 0);
    if (c.n > GQL_MAX_ROOT_FIELDS) {
        /* each root field is a resolver's calls of the services */
        gqlx_error_at(ex, ex->op->line, ex->op->col,
                      "The operation has %zu root fields; at most %d are served at once.", c.n,
                      GQL_MAX_ROOT_FIELDS);
        _collection_free(&c);
        return NULL;
    }
    json_t *data = json_object();
    for (size_t i = 0; i < c.n && !ex->over_budget; i++) {
        collected *it = &c.items[i];
        const gql_sel *s = it->nodes[0];
        if (strcmp(s->name, "__typename") == 0) {
            json_object_set_new(data, it->key, json_string(root));
            continue;
        }
        const gql_root_field *rf = gqlx_root_field(gqlx_op_roots(ex), s->name);
        json_array_append_new(ex->path, json_string(it->key));
        ex->cur = s;
        json_t *value = json_null();
        json_t *args = _args(ex, s, rf);
        if (args) {
            json_t *src = rf->resolve(ex, args);
            json_decref(args);
            if (src) {
                json_decref(value);
                value = _complete(ex, rf->type, rf->list, GQL_AS_IS, src, it->nodes, it->n);
                json_decref(src);
            }
        }
        ex->cur = NULL;
        json_object_set_new(data, it->key, value);
        json_array_remove(ex->path, json_array_size(ex->path) - 1);
    }
    _collection_free(&c);
    return data;
}

/* ---- the request ---------------------------------------------------------- */

static const gql_op *_pick_op(gql_exec *ex, const char *name)
{
    const gql_op *found = NULL;
    size_t n = 0;
    for (const gql_op *o = ex->doc->ops; o; o = o->next) {
        n++;
        if (name && o->name && strcmp(o->name, name) == 0) found = o;
    }
    if (name) {
        if (!found) gqlx_error_at(ex, 0, 0, "Unknown operation named \"%s\".", name);
        return found;
    }
    if (n > 1) {
        gqlx_error_at(ex, 0, 0,
                      "Must provide operation name if query contains multiple operations.");
        return NULL;
    }
    for (const gql_op *o = ex->doc->ops; o; o = o->next)
        if (!o->name && o != ex->doc->ops) {
            gqlx_error_at(ex, o->line, o->col,
                          "This anonymous operation must be the only defined operation.");
            return NULL;
        }
    return ex->doc->ops;
}

json_t *gql_execute(const gql_schema *schema, const gql_request *req, void *user, bool *valid)
{
    *valid = false;
    gql_exec ex = {.schema = schema, .user = user};
    ex.errors = json_array();
    ex.vars = json_object();
    ex.path = json_array();
    json_t *data = NULL;
    gql_doc *doc = NULL;
    gql_parse_error perr;
    if (!gql_parse(req->query, req->query_len, NULL, &doc, &perr)) {
        gqlx_error_at(&ex, perr.line, perr.col, "%s", perr.msg);
        goto out;
    }
    ex.doc = doc;
    ex.op = _pick_op(&ex, req->operation_name);
    if (!ex.op || !gqlx_validate(&ex)) goto out;
    ex.over_budget = false;
    if (!_coerce_vars(&ex, req->variables)) goto out;
    data = _execute_root(&ex);
    *valid = data != NULL;
out:;
    json_t *answer = json_object();
    json_object_set_new(answer, "data", data ? data : json_null());
    if (json_array_size(ex.errors)) json_object_set(answer, "errors", ex.errors);
    json_decref(ex.errors);
    json_decref(ex.vars);
    json_decref(ex.path);
    free(ex.used_frags);
    free(ex.used_vars);
    gql_doc_free(doc);
    return answer;
}
