/* gql_filter.c: see gql_filter.h. A recursive-descent parser into a small
 * tree, evaluated per item. */
/* qsort_r: _GNU_SOURCE comes from the build flags */
#include "gql_filter.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FILTER_TEXT_MAX 1024
#define FILTER_TERMS_MAX 64
#define FILTER_DEPTH_MAX 16
#define FIELD_MAX 64

typedef enum { N_AND, N_OR, N_CMP, N_ISNULL, N_NOTNULL } node_kind;
typedef enum {
    OP_EQ,
    OP_NE,
    OP_GT,
    OP_GE,
    OP_LT,
    OP_LE,
    OP_CONTAINS,
    OP_IN,
    OP_NOT_IN,
    OP_LIKE,
    OP_ILIKE
} cmp_op;

typedef struct node {
    node_kind kind;
    cmp_op op;
    char field[FIELD_MAX];
    json_t *value;
    struct node *l, *r;
} node;

struct gql_filter {
    node *root;
};

typedef struct parser {
    const char *s;
    size_t at;
    int terms, depth;
    char *why;
    size_t why_len;
} parser;

static void _free(node *n)
{
    if (!n) return;
    _free(n->l);
    _free(n->r);
    json_decref(n->value);
    free(n);
}

static node *_fail(parser *p, const char *what)
{
    if (!p->why[0]) snprintf(p->why, p->why_len, "filter: %s at offset %zu", what, p->at);
    return NULL;
}

static void _space(parser *p)
{
    while (isspace((unsigned char)p->s[p->at]))
        p->at++;
}

/* The word at p (letters, digits, '_', '.'), copied into out; its length. */
static size_t _word(parser *p, char *out, size_t cap)
{
    _space(p);
    size_t n = 0;
    const char *s = p->s + p->at;
    if (!isalpha((unsigned char)s[0]) && s[0] != '_') return 0;
    while (isalnum((unsigned char)s[n]) || s[n] == '_' || s[n] == '.')
        n++;
    if (n >= cap) return 0;
    memcpy(out, s, n);
    out[n] = '\0';
    p->at += n;
    return n;
}

static bool _lit(parser *p, const char *lit)
{
    _space(p);
    size_t n = strlen(lit);
    if (strncmp(p->s + p->at, lit, n) != 0) return false;
    p->at += n;
    return true;
}

static json_t *_value(parser *p);

/* A quoted text with backslash escapes. */
static json_t *_string(parser *p)
{
    char q = p->s[p->at++];
    char *buf = ts_malloc(strlen(p->s + p->at) + 1);
    size_t n = 0;
    while (p->s[p->at] && p->s[p->at] != q) {
        if (p->s[p->at] == '\\' && p->s[p->at + 1]) p->at++;
        buf[n++] = p->s[p->at++];
    }
    if (p->s[p->at] != q) {
        free(buf);
        _fail(p, "unterminated text");
        return NULL;
    }
    p->at++;
    json_t *v = json_stringn(buf, n);
    free(buf);
    if (!v) _fail(p, "text that is not UTF-8");
    return v;
}

static json_t *_value(parser *p)
{
    _space(p);
    char c = p->s[p->at];
    if (c == '"' || c == '\'') return _string(p);
    if (c == '[') {
        p->at++;
        json_t *a = json_array();
        if (_lit(p, "]")) return a;
        do {
            json_t *v = _value(p);
            if (!v || json_is_array(v)) {
                json_decref(v);
                json_decref(a);
                _fail(p, "a list of plain values expected");
                return NULL;
            }
            json_array_append_new(a, v);
        } while (_lit(p, ","));
        if (!_lit(p, "]")) {
            json_decref(a);
            _fail(p, "']' expected");
            return NULL;
        }
        return a;
    }
    if (c == '-' || c == '+' || isdigit((unsigned char)c)) {
        char *end = NULL;
        double d = strtod(p->s + p->at, &end);
        if (end == p->s + p->at || !isfinite(d)) return _fail(p, "a number expected"), NULL;
        p->at = (size_t)(end - p->s);
        return d == floor(d) && fabs(d) < 9e15 ? json_integer((json_int_t)d) : json_real(d);
    }
    char w[16];
    if (_word(p, w, sizeof(w))) {
        if (strcasecmp(w, "true") == 0) return json_true();
        if (strcasecmp(w, "false") == 0) return json_false();
        if (strcasecmp(w, "null") == 0 || strcasecmp(w, "none") == 0) return json_null();
    }
    _fail(p, "a value expected (\"text\", a number, true, false, null or a list)");
    return NULL;
}

static const struct {
    const char *lit;
    cmp_op op;
} OPS[] = {{"==", OP_EQ},
           {"!=", OP_NE},
           {">=", OP_GE},
           {"<=", OP_LE},
           {">", OP_GT},
           {"<", OP_LT},
           {"contains", OP_CONTAINS},
           {"not in", OP_NOT_IN},
           {"in", OP_IN},
           {"ilike", OP_ILIKE},
           {"like", OP_LIKE}};

static node *_expr(parser *p);

static node *_term(parser *p)
{
    if (++p->terms > FILTER_TERMS_MAX) return _fail(p, "too many terms");
    if (_lit(p, "(")) {
        if (++p->depth > FILTER_DEPTH_MAX) return _fail(p, "nested too deep");
        node *n = _expr(p);
        p->depth--;
        if (!n) return NULL;
        if (!_lit(p, ")")) {
            _free(n);
            return _fail(p, "')' expected");
        }
        return n;
    }
    node *n = ts_calloc(1, sizeof(*n));
    if (!_word(p, n->field, sizeof(n->field))) {
        free(n);
        return _fail(p, "a field name expected");
    }
    if (_lit(p, "isnull")) {
        n->kind = N_ISNULL;
        return n;
    }
    if (_lit(p, "notnull")) {
        n->kind = N_NOTNULL;
        return n;
    }
    n->kind = N_CMP;
    _space(p);
    bool found = false;
    for (size_t i = 0; i < TS_ARRAY_LEN(OPS) && !found; i++)
        if (_lit(p, OPS[i].lit)) {
            n->op = OPS[i].op;
            found = true;
        }
    if (!found || !(n->value = _value(p))) {
        _free(n);
        return _fail(p, "an operator (== != > >= < <= contains in like ilike) expected");
    }
    bool list = json_is_array(n->value);
    if (list != (n->op == OP_IN || n->op == OP_NOT_IN)) {
        _free(n);
        return _fail(p, "in and not in take a list, the others a plain value");
    }
    return n;
}

/* and-terms: term ("&" term)* */
static node *_and(parser *p)
{
    node *l = _term(p);
    while (l && _lit(p, "&")) {
        node *r = _term(p), *n = r ? ts_calloc(1, sizeof(*n)) : NULL;
        if (!r) {
            _free(l);
            return NULL;
        }
        n->kind = N_AND;
        n->l = l;
        n->r = r;
        l = n;
    }
    return l;
}

static node *_expr(parser *p)
{
    node *l = _and(p);
    while (l && _lit(p, "|")) {
        node *r = _and(p), *n = r ? ts_calloc(1, sizeof(*n)) : NULL;
        if (!r) {
            _free(l);
            return NULL;
        }
        n->kind = N_OR;
        n->l = l;
        n->r = r;
        l = n;
    }
    return l;
}

gql_filter *gql_filter_parse(const char *text, ts_err *err)
{
    err->msg[0] = '\0';
    if (!text || strlen(text) > FILTER_TEXT_MAX) {
        ts_err_set(err, "filter: at most %d bytes", FILTER_TEXT_MAX);
        return NULL;
    }
    parser p = {.s = text, .why = err->msg, .why_len = sizeof(err->msg)};
    node *root = _expr(&p);
    _space(&p);
    if (root && p.s[p.at]) {
        _free(root);
        root = _fail(&p, "unexpected text");
    }
    if (!root) return NULL;
    gql_filter *f = ts_malloc(sizeof(*f));
    f->root = root;
    return f;
}

void gql_filter_free(gql_filter *f)
{
    if (!f) return;
    _free(f->root);
    free(f);
}

/* ---- evaluation ------------------------------------------------------------------ */

/* SQL LIKE: % any run, _ any one character; fold: without regard to case. */
static bool _like(const char *s, const char *pat, bool fold)
{
    for (; *pat; pat++, s++) {
        if (*pat == '%') {
            while (pat[1] == '%')
                pat++;
            if (!pat[1]) return true;
            for (; *s; s++)
                if (_like(s, pat + 1, fold)) return true;
            return false;
        }
        if (!*s) return false;
        if (*pat == '_') continue;
        char a = fold ? (char)tolower((unsigned char)*s) : *s;
        char b = fold ? (char)tolower((unsigned char)*pat) : *pat;
        if (a != b) return false;
    }
    return !*s;
}

/* v as text (numbers and booleans written out) into buf; NULL for null. */
static const char *_text(const json_t *v, char *buf, size_t n)
{
    if (json_is_string(v)) return json_string_value(v);
    if (json_is_integer(v))
        snprintf(buf, n, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, n, "%.17g", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(buf, n, "%s", json_is_true(v) ? "true" : "false");
    else
        return NULL;
    return buf;
}

/* <0, 0, >0 like strcmp; *ok false when the two cannot be ordered. */
static int _compare(const json_t *a, const json_t *b, bool fold, bool *ok)
{
    *ok = true;
    if (json_is_number(a) && json_is_number(b)) {
        double x = json_number_value(a), y = json_number_value(b);
        return x < y ? -1 : x > y ? 1 : 0;
    }
    char ba[40], bb[40];
    const char *x = _text(a, ba, sizeof(ba)), *y = _text(b, bb, sizeof(bb));
    if (!x || !y) {
        *ok = json_is_null(a) && json_is_null(b);
        return *ok ? 0 : 1;
    }
    return fold ? strcasecmp(x, y) : strcmp(x, y);
}

static bool _equal(const json_t *a, const json_t *b)
{
    bool ok;
    int c = _compare(a, b, true, &ok);
    return ok && c == 0;
}

static bool _cmp(const node *n, const json_t *v)
{
    bool ok = true;
    size_t i;
    json_t *e;
    switch (n->op) {
    case OP_EQ:
        return _equal(v, n->value);
    case OP_NE:
        return !_equal(v, n->value);
    case OP_IN:
    case OP_NOT_IN: {
        bool in = false;
        json_array_foreach(n->value, i, e) in = in || _equal(v, e);
        return n->op == OP_IN ? in : !in;
    }
    case OP_CONTAINS:
        if (json_is_array(v)) {
            json_array_foreach(v, i, e) if (_equal(e, n->value)) return true;
            return false;
        }
        return json_is_string(v) && json_is_string(n->value) &&
               strstr(json_string_value(v), json_string_value(n->value));
    case OP_LIKE:
    case OP_ILIKE:
        return json_is_string(v) && json_is_string(n->value) &&
               _like(json_string_value(v), json_string_value(n->value), n->op == OP_ILIKE);
    default: {
        int c = _compare(v, n->value, false, &ok);
        if (!ok || json_is_null(v)) return false;
        return n->op == OP_GT ? c > 0 : n->op == OP_GE ? c >= 0 : n->op == OP_LT ? c < 0 : c <= 0;
    }
    }
}

static bool _eval(const node *n, const json_t *item)
{
    const json_t *v = n->field[0] ? json_object_get(item, n->field) : NULL;
    if (!v) v = json_null();
    switch (n->kind) {
    case N_AND:
        return _eval(n->l, item) && _eval(n->r, item);
    case N_OR:
        return _eval(n->l, item) || _eval(n->r, item);
    case N_ISNULL:
        return json_is_null(v);
    case N_NOTNULL:
        return !json_is_null(v);
    default:
        return _cmp(n, v);
    }
}

bool gql_filter_match(const gql_filter *f, const json_t *item)
{
    return _eval(f->root, item);
}

/* ---- order ------------------------------------------------------------------------ */

#define ORDER_KEYS_MAX 8

typedef struct order_key {
    char field[FIELD_MAX];
    bool desc;
} order_key;

typedef struct order_spec {
    order_key keys[ORDER_KEYS_MAX];
    size_t n;
} order_spec;

static int _by(const void *a, const void *b, void *arg)
{
    const order_spec *o = arg;
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    for (size_t i = 0; i < o->n; i++) {
        const json_t *vx = json_object_get(x, o->keys[i].field);
        const json_t *vy = json_object_get(y, o->keys[i].field);
        bool nx = !vx || json_is_null(vx), ny = !vy || json_is_null(vy), ok;
        int c = nx || ny ? (nx == ny ? 0 : nx ? 1 : -1) : _compare(vx, vy, false, &ok);
        if (c) return o->keys[i].desc && !(nx || ny) ? -c : c; /* nulls last */
    }
    return 0;
}

json_t *gql_refine(gql_exec *ex, json_t *all, const json_t *args)
{
    const char *filter = json_string_value(json_object_get(args, "filter"));
    const char *order = json_string_value(json_object_get(args, "order"));
    ts_err err = {{0}};
    if (filter) {
        gql_filter *f = gql_filter_parse(filter, &err);
        if (!f) {
            gql_error(ex, "%s", err.msg);
            json_decref(all);
            return NULL;
        }
        for (size_t i = json_array_size(all); i-- > 0;)
            if (!gql_filter_match(f, json_array_get(all, i))) json_array_remove(all, i);
        gql_filter_free(f);
    }
    if (order && !gql_order_sort(all, order, &err)) {
        gql_error(ex, "%s", err.msg);
        json_decref(all);
        return NULL;
    }
    json_int_t limit = json_integer_value(json_object_get(args, "limit"));
    json_int_t offset = json_integer_value(json_object_get(args, "offset"));
    json_t *items = json_array();
    for (json_int_t i = offset < 0 ? 0 : offset;
         i < (json_int_t)json_array_size(all) && i < offset + limit; i++)
        json_array_append(items, json_array_get(all, (size_t)i));
    json_t *out =
        json_pack("{s:o, s:I}", "items", items, "total_count", (json_int_t)json_array_size(all));
    json_decref(all);
    return out;
}

bool gql_order_sort(json_t *items, const char *order, ts_err *err)
{
    order_spec o = {.n = 0};
    parser p = {.s = order, .why = err->msg, .why_len = sizeof(err->msg)};
    err->msg[0] = '\0';
    if (!order || strlen(order) > FILTER_TEXT_MAX) {
        ts_err_set(err, "order: at most %d bytes", FILTER_TEXT_MAX);
        return false;
    }
    do {
        if (o.n == ORDER_KEYS_MAX) {
            ts_err_set(err, "order: at most %d fields", ORDER_KEYS_MAX);
            return false;
        }
        order_key *k = &o.keys[o.n++];
        k->desc = _lit(&p, "-");
        if (!k->desc) (void)_lit(&p, "+");
        if (!_word(&p, k->field, sizeof(k->field))) {
            ts_err_set(err, "order: [+|-]field, comma-separated, expected at offset %zu", p.at);
            return false;
        }
        if (_lit(&p, "asc"))
            k->desc = false;
        else if (_lit(&p, "desc"))
            k->desc = true;
    } while (_lit(&p, ","));
    _space(&p);
    if (p.s[p.at]) {
        ts_err_set(err, "order: unexpected text at offset %zu", p.at);
        return false;
    }
    size_t n = json_array_size(items);
    json_t **v = ts_malloc((n ? n : 1) * sizeof(*v));
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(items, i));
    qsort_r(v, n, sizeof(*v), _by, &o);
    json_array_clear(items);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(items, v[i]);
    free(v);
    return true;
}
