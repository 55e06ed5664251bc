/* fuzz_gql.c: arbitrary bytes as a GraphQL document (the gateway's
 * /admin/graphql), through gql_parse with the default limits and with tiny
 * ones. A refusal has a message (valid UTF-8) and a place. An accepted
 * document is walked whole: every operation and inline fragment has
 * selections, names are non-empty Names, each value kind carries what it
 * should (integers and floats as the grammar has them, strings valid UTF-8,
 * no variable in a default, distinct input field names), nesting and node
 * count within the limits, fragments distinct and found by
 * gql_doc_fragment; printed back, it parses to the same print. What the
 * tiny limits accept, the defaults accept. Leaks fail (ASan). */
#include "services/gateway/gql_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct walk {
    const gql_limits *lim;
    unsigned nodes;
    char *out; /* the document printed back */
    size_t len, cap;
} walk;

static void put(walk *w, const char *s, size_t n)
{
    if (w->len + n + 1 > w->cap) {
        w->cap = 2 * (w->len + n + 1);
        w->out = realloc(w->out, w->cap);
        if (!w->out) abort();
    }
    memcpy(w->out + w->len, s, n);
    w->len += n;
    w->out[w->len] = '\0';
}

static void puts_(walk *w, const char *s)
{
    put(w, s, strlen(s));
}

static bool is_name(const char *s)
{
    if (!s || !(*s == '_' || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z'))) return false;
    for (s++; *s; s++)
        if (!(*s == '_' || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
              (*s >= '0' && *s <= '9')))
            return false;
    return true;
}

static const char *digits(const char *s)
{
    const char *d = s;
    while (*d >= '0' && *d <= '9')
        d++;
    return d > s ? d : NULL;
}

/* -?(0|[1-9][0-9]*) then, for a float, a fraction and/or an exponent. */
static bool is_number(const char *s, bool is_float)
{
    if (*s == '-') s++;
    if (*s == '0' && s[1] >= '0' && s[1] <= '9') return false;
    if (!(s = digits(s))) return false;
    bool frac = *s == '.', exp;
    if (frac && !(s = digits(s + 1))) return false;
    exp = *s == 'e' || *s == 'E';
    if (exp && (s[1] == '+' || s[1] == '-')) s++;
    if (exp && !(s = digits(s + 1))) return false;
    return *s == '\0' && is_float == (frac || exp);
}

static bool is_utf8(const unsigned char *s)
{
    while (*s) {
        int n = *s < 0x80                 ? 0
                : *s >= 0xC2 && *s < 0xE0 ? 1
                : *s >= 0xE0 && *s < 0xF0 ? 2
                : *s >= 0xF0 && *s < 0xF5 ? 3
                                          : -1;
        if (n < 0) return false;
        for (s++; n > 0; n--, s++)
            if ((*s & 0xC0) != 0x80) return false;
    }
    return true;
}

static void check_depth(walk *w, unsigned depth)
{
    if (depth > w->lim->max_depth) abort();
}

static void value(walk *w, const gql_value *v, unsigned depth, bool is_const)
{
    char b[8];
    w->nodes++;
    bool has_text = v->kind != GQL_V_NULL && v->kind != GQL_V_BOOL && v->kind != GQL_V_LIST &&
                    v->kind != GQL_V_OBJECT;
    if (has_text != (v->text != NULL)) abort();
    if (v->items && v->kind != GQL_V_LIST && v->kind != GQL_V_OBJECT) abort();
    switch (v->kind) {
    case GQL_V_NULL:
        puts_(w, "null");
        break;
    case GQL_V_INT:
    case GQL_V_FLOAT:
        if (!is_number(v->text, v->kind == GQL_V_FLOAT)) abort();
        puts_(w, v->text);
        break;
    case GQL_V_STRING:
        if (!is_utf8((const unsigned char *)v->text)) abort();
        puts_(w, "\"");
        for (const char *c = v->text; *c; c++) {
            if (*c == '"' || *c == '\\') put(w, "\\", 1);
            if ((unsigned char)*c < 0x20 || *c == 0x7F) {
                snprintf(b, sizeof(b), "\\u%04x", *c);
                puts_(w, b);
            } else {
                put(w, c, 1);
            }
        }
        puts_(w, "\"");
        break;
    case GQL_V_BOOL:
        puts_(w, v->boolean ? "true" : "false");
        break;
    case GQL_V_ENUM:
        if (!is_name(v->text) || !strcmp(v->text, "true") || !strcmp(v->text, "false") ||
            !strcmp(v->text, "null"))
            abort();
        puts_(w, v->text);
        break;
    case GQL_V_VAR:
        if (is_const || !is_name(v->text)) abort();
        puts_(w, "$");
        puts_(w, v->text);
        break;
    case GQL_V_LIST:
    case GQL_V_OBJECT:
        check_depth(w, depth + 1);
        puts_(w, v->kind == GQL_V_LIST ? "[" : "{");
        for (const gql_value *i = v->items; i; i = i->next) {
            if ((v->kind == GQL_V_OBJECT) != (i->name != NULL)) abort();
            if (i->name) {
                if (!is_name(i->name)) abort();
                for (const gql_value *j = v->items; j != i; j = j->next)
                    if (!strcmp(j->name, i->name)) abort();
                puts_(w, i->name);
                puts_(w, ":");
            }
            value(w, i, depth + 1, is_const);
            puts_(w, " ");
        }
        puts_(w, v->kind == GQL_V_LIST ? "]" : "}");
        break;
    default:
        abort();
    }
}

static void args(walk *w, const gql_arg *a, unsigned depth)
{
    if (!a) return;
    puts_(w, "(");
    for (; a; a = a->next) {
        w->nodes++;
        if (!is_name(a->name) || !a->value || !a->line || !a->col) abort();
        puts_(w, a->name);
        puts_(w, ":");
        value(w, a->value, depth, false);
        puts_(w, " ");
    }
    puts_(w, ")");
}

static void directives(walk *w, const gql_directive *d, unsigned depth)
{
    for (; d; d = d->next) {
        w->nodes++;
        if (!is_name(d->name) || !d->line || !d->col) abort();
        puts_(w, " @");
        puts_(w, d->name);
        args(w, d->args, depth);
    }
}

static void sels(walk *w, const gql_sel *s, unsigned depth)
{
    if (!s) abort();
    check_depth(w, depth);
    puts_(w, "{");
    for (; s; s = s->next) {
        w->nodes++;
        if (!s->line || !s->col) abort();
        puts_(w, " ");
        switch (s->kind) {
        case GQL_SEL_FIELD:
            if (!is_name(s->name) || (s->alias && !is_name(s->alias)) || s->type_cond) abort();
            if (s->alias) {
                puts_(w, s->alias);
                puts_(w, ":");
            }
            puts_(w, s->name);
            args(w, s->args, depth);
            directives(w, s->directives, depth);
            if (s->sels) sels(w, s->sels, depth + 1);
            break;
        case GQL_SEL_SPREAD:
            if (!is_name(s->name) || !strcmp(s->name, "on") || s->alias || s->args || s->sels ||
                s->type_cond)
                abort();
            puts_(w, "...");
            puts_(w, s->name);
            directives(w, s->directives, depth);
            break;
        case GQL_SEL_INLINE:
            if (s->name || s->alias || s->args || (s->type_cond && !is_name(s->type_cond))) abort();
            puts_(w, "...");
            if (s->type_cond) {
                puts_(w, " on ");
                puts_(w, s->type_cond);
            }
            directives(w, s->directives, depth);
            sels(w, s->sels, depth + 1);
            break;
        default:
            abort();
        }
    }
    puts_(w, " }");
}

static void type(walk *w, const gql_type *t, unsigned depth)
{
    w->nodes++;
    if (!t || (t->name != NULL) == (t->of != NULL)) abort();
    if (t->name && !is_name(t->name)) abort();
    if (t->of) {
        check_depth(w, depth + 1);
        puts_(w, "[");
        type(w, t->of, depth + 1);
        puts_(w, "]");
    } else {
        puts_(w, t->name);
    }
    if (t->non_null) puts_(w, "!");
}

/* Checks the document and prints it into w->out. */
static void document(walk *w, const gql_doc *doc)
{
    static const char *const kinds[] = {"query", "mutation", "subscription"};
    if (!doc->ops || !doc->arena) abort();
    for (const gql_op *op = doc->ops; op; op = op->next) {
        if ((unsigned)op->kind > GQL_OP_SUBSCRIPTION || (op->name && !is_name(op->name))) abort();
        if (!op->line || !op->col) abort();
        puts_(w, kinds[op->kind]);
        puts_(w, " ");
        if (op->name) puts_(w, op->name);
        if (op->vars) puts_(w, "(");
        for (const gql_vardef *v = op->vars; v; v = v->next) {
            w->nodes++;
            if (!is_name(v->name) || !v->line || !v->col) abort();
            puts_(w, "$");
            puts_(w, v->name);
            puts_(w, ":");
            type(w, v->type, 0);
            if (v->def) {
                puts_(w, "=");
                value(w, v->def, 0, true);
            }
            puts_(w, v->next ? " " : ")");
        }
        directives(w, op->directives, 0);
        sels(w, op->sels, 1);
        puts_(w, "\n");
    }
    for (const gql_frag *f = doc->frags; f; f = f->next) {
        if (!is_name(f->name) || !strcmp(f->name, "on") || !is_name(f->type_cond)) abort();
        if (gql_doc_fragment(doc, f->name) != f || !f->line || !f->col) abort();
        puts_(w, "fragment ");
        puts_(w, f->name);
        puts_(w, " on ");
        puts_(w, f->type_cond);
        directives(w, f->directives, 0);
        sels(w, f->sels, 1);
        puts_(w, "\n");
    }
    if (w->nodes > w->lim->max_nodes) abort();
}

/* Parses with lim; on success checks the tree and returns its print. */
static bool check(const uint8_t *data, size_t size, const gql_limits *lim, char **print)
{
    gql_doc *doc = (gql_doc *)1;
    gql_parse_error err;
    *print = NULL;
    if (!gql_parse((const char *)data, size, lim, &doc, &err)) {
        if (doc || !err.msg[0] || !is_utf8((const unsigned char *)err.msg)) abort();
        if ((err.line == 0) != (err.col == 0)) abort();
        unsigned lines = 1; /* the place is in the source, or just past it */
        for (size_t i = 0; i < size; i++)
            lines += data[i] == '\n' || (data[i] == '\r' && (i + 1 == size || data[i + 1] != '\n'));
        if (err.line > lines || err.col > size + 1) abort();
        return false;
    }
    walk w = {.lim = lim ? lim : &gql_default_limits};
    document(&w, doc);
    gql_doc_free(doc);
    *print = w.out;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const gql_limits tiny = {.max_bytes = 512, .max_depth = 3, .max_nodes = 24};
    char *print, *tiny_print, *again;
    bool ok = check(data, size, NULL, &print);
    if (check(data, size, &tiny, &tiny_print) && !ok) abort();
    if (ok) {
        /* The print parses (its size aside) to the same print. */
        gql_limits roomy = gql_default_limits;
        roomy.max_bytes = strlen(print);
        if (!check((const uint8_t *)print, strlen(print), &roomy, &again)) abort();
        if (strcmp(print, again) != 0) abort();
        free(again);
    }
    free(print);
    free(tiny_print);
    return 0;
}
