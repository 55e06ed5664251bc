/* gql_parse.c: GraphQL request documents (gql_parse.h), by hand, in one pass.
 *
 * The lexer (_advance) reads one token ahead, skipping the ignored ones
 * (whitespace, line terminators, commas, comments, the BOM); it checks UTF-8,
 * refuses control characters wherever it reads (comments and strings too)
 * and decodes string literals into the arena. A recursive-descent parser,
 * one static function per rule of the October 2021 specification's
 * executable grammar, builds the tree.
 *
 * Everything lives in one arena of zeroed chunks: an error drops it whole,
 * so nothing leaks and nothing half-built needs undoing. Each selection set,
 * list or object value and list type entered is a level of depth, checked
 * before going deeper, so the C stack holds a few frames per allowed level
 * (at most DEPTH_CAP levels, whatever the limits say); each node allocated
 * counts against max_nodes. Errors are worded as graphql-js words them, at
 * the 1-based line and column (in characters) of the offending token or
 * character; quoted source text is clipped whole characters at a time. */
#include "gql_parse.h"

#include "libcommon/utf8.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const gql_limits gql_default_limits = {.max_bytes = 64 * 1024, .max_depth = 16, .max_nodes = 10000};

#define DEPTH_CAP 256    /* the most levels the parser recurses, whatever lim says */
#define CHUNK_BYTES 8192 /* an arena chunk, unless one allocation needs more */
#define NOWHERE SIZE_MAX /* an error not tied to a place: line and column 0 */
#define SE "Syntax Error: "

/* ---- the arena ---- */

typedef struct chunk chunk;
struct chunk {
    chunk *next;
    size_t used, cap; /* bytes of data */
    max_align_t data[];
};

/* n zeroed bytes, aligned for any type, from the chunks at *head: they
 * live until _arena_free. */
static void *_alloc(chunk **head, size_t n)
{
    n = (n + _Alignof(max_align_t) - 1) / _Alignof(max_align_t) * _Alignof(max_align_t);
    chunk *c = *head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > CHUNK_BYTES ? n : CHUNK_BYTES;
        c = ts_calloc(1, sizeof(chunk) + cap);
        c->cap = cap;
        c->next = *head;
        *head = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    return p;
}

static void _arena_free(chunk *c)
{
    while (c) {
        chunk *next = c->next;
        free(c);
        c = next;
    }
}

/* ---- the lexer ---- */

/* A token's kind: a punctuator is its own character ('.' for "..."); the
 * other kinds are these. */
static const char PUNCT[] = "!$&():=@[]{|}";
enum { T_EOF = 0, T_NAME = 'N', T_INT = 'I', T_FLOAT = 'F', T_STRING = 'S', T_BLOCK = 'B' };

typedef struct token {
    int kind;
    size_t start, end;  /* bytes of the source */
    unsigned line, col; /* of start */
    const char *str;    /* STRING, BLOCK_STRING: the decoded value (arena) */
} token;

typedef struct parser {
    const char *src;
    size_t len, pos; /* pos: where the next token's search starts */
    token tok;       /* the current token */
    size_t loc_pos;  /* the locator: line and column of byte loc_pos */
    unsigned loc_line, loc_col;
    chunk *arena;
    unsigned depth, max_depth, nodes, max_nodes;
    char *sc; /* scratch: a string literal being decoded */
    size_t sc_len, sc_cap;
    gql_parse_error *err;
} parser;

/* Line and column of byte pos. The cursor only moves forward (the lexer
 * asks in source order), so locating every token costs one pass in all; a
 * position behind it (an error pointing back) starts over. */
static void _locate(parser *p, size_t pos, unsigned *line, unsigned *col)
{
    if (pos < p->loc_pos) {
        p->loc_pos = 0;
        p->loc_line = p->loc_col = 1;
    }
    for (; p->loc_pos < pos && p->loc_pos < p->len; p->loc_pos++) {
        unsigned char c = (unsigned char)p->src[p->loc_pos]; /* \r\n: a line ends at \n */
        if (c == '\n' ||
            (c == '\r' && !(p->loc_pos + 1 < p->len && p->src[p->loc_pos + 1] == '\n'))) {
            p->loc_line++;
            p->loc_col = 1;
        } else if ((c & 0xC0) != 0x80) { /* not a UTF-8 continuation byte */
            p->loc_col++;
        }
    }
    *line = p->loc_line;
    *col = p->loc_col;
}

static TS_PRINTF(3, 4) bool _fail(parser *p, size_t pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err->msg, sizeof(p->err->msg), fmt, ap);
    va_end(ap);
    if (pos == NOWHERE)
        p->err->line = p->err->col = 0;
    else
        _locate(p, pos, &p->err->line, &p->err->col);
    return false;
}

/* The character at i as graphql-js prints it: "c" when printable ASCII
 * ('"' for a quote), U+XXXX otherwise, <EOF> past the end. */
static const char *_char_desc(const parser *p, size_t i, char buf[16])
{
    uint32_t cp;
    if (i >= p->len) return "<EOF>";
    if (!utf8_decode(p->src + i, p->len - i, &cp)) return "invalid UTF-8";
    if (cp == '"') return "'\"'";
    if (cp >= 0x20 && cp < 0x7F)
        snprintf(buf, 16, "\"%c\"", (char)cp);
    else
        snprintf(buf, 16, "U+%04X", (unsigned)cp);
    return buf;
}

/* The source character at i must be valid UTF-8 and no control character
 * but tab, LF and CR: its length in *len, or the error (`what`: "Unexpected
 * character", or IN_STRING). */
#define IN_STRING "Invalid character within String"
static bool _char(parser *p, size_t i, size_t *len, const char *what)
{
    uint32_t cp;
    char b[16];
    size_t k = utf8_decode(p->src + i, p->len - i, &cp);
    if (!k) return _fail(p, i, SE "Invalid UTF-8 in the source.");
    if ((cp < 0x20 && !memchr("\t\n\r", (int)cp, 3)) || cp == 0x7F)
        return _fail(p, i, SE "%s: %s.", what, _char_desc(p, i, b));
    *len = k;
    return true;
}

static bool _at(const parser *p, size_t i, const char *lit)
{
    size_t n = strlen(lit);
    return i <= p->len && p->len - i >= n && memcmp(p->src + i, lit, n) == 0;
}

#define _digit(c) ((c) >= '0' && (c) <= '9')
#define _name_start(c) ((c) == '_' || ((c) >= 'A' && (c) <= 'Z') || ((c) >= 'a' && (c) <= 'z'))

static int _hex(char c)
{
    static const char digits[] = "0123456789abcdef0123456789ABCDEF"; /* index & 15 */
    const char *d = c ? strchr(digits, c) : NULL;
    return d ? (int)((d - digits) & 15) : -1;
}

static char *_strndup(parser *p, const char *s, size_t n)
{
    char *d = _alloc(&p->arena, n + 1); /* zeroed: terminated */
    memcpy(d, s, n);
    return d;
}

static void _put(parser *p, const char *s, size_t n)
{
    if (p->sc_cap - p->sc_len < n) {
        p->sc_cap = 2 * (p->sc_len + n);
        p->sc = ts_realloc(p->sc, p->sc_cap);
    }
    memcpy(p->sc + p->sc_len, s, n);
    p->sc_len += n;
}

static void _put_utf8(parser *p, uint32_t cp)
{
    char b[4];
    size_t n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    static const unsigned char lead[] = {0, 0, 0xC0, 0xE0, 0xF0};
    for (size_t k = n - 1; k > 0; k--, cp >>= 6)
        b[k] = (char)(0x80 | (cp & 0x3F));
    b[0] = (char)(lead[n] | cp);
    _put(p, b, n);
}

static bool _token(parser *p, int kind, size_t end, const char *str)
{
    p->tok.kind = kind;
    p->tok.end = p->pos = end;
    p->tok.str = str;
    return true;
}

/* Up to n bytes of the source at i, as long as they are printable ASCII
 * (for quoting an escape sequence in a message). */
static const char *_slice(const parser *p, size_t i, size_t n, char buf[24])
{
    size_t k = 0;
    for (; k < n && k < 23 && i + k < p->len; k++) {
        char c = p->src[i + k];
        if (c < 0x20 || c > 0x7E || (c == '"' && k > 0)) break;
        buf[k] = c;
    }
    buf[k] = '\0';
    return buf;
}

/* A \uXXXX at i, its code unit, or -1. */
static long _u4(const parser *p, size_t i)
{
    long v = 0;
    if (!_at(p, i, "\\u") || p->len - i < 6) return -1;
    for (size_t k = i + 2; k < i + 6; k++) {
        if (_hex(p->src[k]) < 0) return -1;
        v = v << 4 | _hex(p->src[k]);
    }
    return v;
}

/* The escape sequence at i (a backslash) of a "string", decoded into the
 * scratch buffer, the bytes it takes in *len; or the error. \uXXXX takes a
 * surrogate pair as one character; \u{X...} is the 2021 variable width. */
static bool _escape(parser *p, size_t i, size_t *len)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    char e = i + 1 < p->len ? p->src[i + 1] : '\0', b[24];
    const char *simple = e ? memchr(from, e, sizeof(from) - 1) : NULL;
    long cp = simple ? to[simple - from] : -1;
    size_t n = simple ? 2 : 6;
    if (!simple && e != 'u')
        return _fail(p, i, SE "Invalid character escape sequence: \"%s\".", _slice(p, i, 2, b));
    if (e == 'u' && _at(p, i + 2, "{")) {
        for (cp = 0, n = 3; i + n < p->len && _hex(p->src[i + n]) >= 0 && n < 11; n++)
            cp = cp << 4 | _hex(p->src[i + n]);
        if (n == 3 || !_at(p, i + n, "}")) cp = -1;
        n++; /* the "}" */
    } else if (e == 'u' && (cp = _u4(p, i)) >= 0xD800 && cp <= 0xDBFF) {
        long low = _u4(p, i + 6);
        if (low >= 0xDC00 && low <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            n = 12;
        }
    }
    if (cp < 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return _fail(p, i, SE "Invalid Unicode escape sequence: \"%s\".", _slice(p, i, n, b));
    if (cp == 0)
        return _fail(p, i, SE "Invalid Unicode escape sequence: \"%s\" (NUL is not allowed).",
                     _slice(p, i, n, b));
    _put_utf8(p, (uint32_t)cp);
    *len = n;
    return true;
}

/* A line of a block string's raw text r (n bytes) from *at: its end; *at
 * moves to the next line's start (n + 1 after the last line). */
static size_t _line(const char *r, size_t n, size_t *at)
{
    size_t eol = *at;
    while (eol < n && r[eol] != '\n' && r[eol] != '\r')
        eol++;
    *at = eol + (eol + 1 < n && r[eol] == '\r' && r[eol + 1] == '\n' ? 2 : 1);
    return eol;
}

/* The specification's BlockStringValue of the raw text in the scratch
 * buffer: the common indentation of the lines after the first removed,
 * blank lines at the start and at the end dropped, lines joined by "\n". */
static char *_block_value(parser *p)
{
    const char *r = p->sc;
    size_t n = p->sc_len, common = SIZE_MAX, first = SIZE_MAX, last = 0, k, at;
    for (k = 0, at = 0; at <= n; k++) {
        size_t start = at, eol = _line(r, n, &at), ind = start;
        while (ind < eol && (r[ind] == ' ' || r[ind] == '\t'))
            ind++;
        if (ind == eol) continue; /* blank */
        if (k > 0 && ind - start < common) common = ind - start;
        if (first == SIZE_MAX) first = k;
        last = k;
    }
    char *out = _alloc(&p->arena, n + 1), *o = out;
    for (k = 0, at = 0; first != SIZE_MAX && k <= last; k++) {
        size_t start = at, eol = _line(r, n, &at);
        if (k < first) continue;
        if (k > 0) start += eol - start < common ? eol - start : common;
        memcpy(o, r + start, eol - start);
        o += eol - start;
        if (k < last) *o++ = '\n';
    }
    return out; /* zeroed: terminated */
}

/* A "string" at i, escapes decoded, or a """block string""", raw but for
 * \""" and then made its BlockStringValue. */
static bool _string(parser *p, size_t i)
{
    bool block = _at(p, i, "\"\"\""), escape;
    size_t j = i + (block ? 3 : 1), k;
    p->sc_len = 0;
    for (;;) {
        if (j >= p->len || (!block && (p->src[j] == '\n' || p->src[j] == '\r')))
            return _fail(p, j, SE "Unterminated string.");
        if (block ? _at(p, j, "\"\"\"") : p->src[j] == '"') break;
        if (block && _at(p, j, "\\\"\"\"")) {
            _put(p, "\"\"\"", 3);
            j += 4;
            continue;
        }
        escape = !block && p->src[j] == '\\';
        if (!(escape ? _escape(p, j, &k) : _char(p, j, &k, IN_STRING))) return false;
        if (!escape) _put(p, p->src + j, k);
        j += k;
    }
    if (!block) return _token(p, T_STRING, j + 1, _strndup(p, p->sc, p->sc_len));
    return _token(p, T_BLOCK, j + 3, _block_value(p));
}

/* One or more digits at *j, or the error. */
static bool _digits(parser *p, size_t *j)
{
    char b[16];
    if (*j >= p->len || !_digit(p->src[*j]))
        return _fail(p, *j, SE "Invalid number, expected digit but got: %s.", _char_desc(p, *j, b));
    while (*j < p->len && _digit(p->src[*j]))
        ++*j;
    return true;
}

/* IntValue or FloatValue at i: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?,
 * and then neither a digit after a lone 0, nor "." nor a name character. */
static bool _number(parser *p, size_t i)
{
    const char *s = p->src;
    size_t j = i + (s[i] == '-');
    int kind = T_INT;
    char b[16];
    if (j < p->len && s[j] == '0') {
        if (++j < p->len && _digit(s[j]))
            return _fail(p, j, SE "Invalid number, unexpected digit after 0: %s.",
                         _char_desc(p, j, b));
    } else if (!_digits(p, &j)) {
        return false;
    }
    if (j < p->len && s[j] == '.') {
        kind = T_FLOAT;
        j++;
        if (!_digits(p, &j)) return false;
    }
    if (j < p->len && (s[j] == 'e' || s[j] == 'E')) {
        kind = T_FLOAT;
        if (++j < p->len && (s[j] == '+' || s[j] == '-')) j++;
        if (!_digits(p, &j)) return false;
    }
    if (j < p->len && (s[j] == '.' || _name_start(s[j])))
        return _fail(p, j, SE "Invalid number, expected digit but got: %s.", _char_desc(p, j, b));
    return _token(p, kind, j, NULL);
}

/* The next token into p->tok. */
static bool _advance(parser *p)
{
    const char *s = p->src;
    size_t i = p->pos, n = p->len, k;
    char b[16];
    for (;;) { /* the ignored tokens */
        if (i < n && memchr(" \t\n\r,", s[i], 5)) {
            i++;
        } else if (_at(p, i, "\xEF\xBB\xBF")) {
            i += 3;
        } else if (i < n && s[i] == '#') {
            for (i++; i < n && s[i] != '\n' && s[i] != '\r'; i += k)
                if (!_char(p, i, &k, "Unexpected character")) return false;
        } else {
            break;
        }
    }
    p->tok.start = i;
    _locate(p, i, &p->tok.line, &p->tok.col);
    if (i >= n) return _token(p, T_EOF, i, NULL);
    if (memchr(PUNCT, s[i], sizeof(PUNCT) - 1)) return _token(p, s[i], i + 1, NULL);
    if (_at(p, i, "...")) return _token(p, '.', i + 3, NULL);
    if (_name_start(s[i])) {
        size_t j = i + 1;
        while (j < n && (_name_start(s[j]) || _digit(s[j])))
            j++;
        return _token(p, T_NAME, j, NULL);
    }
    if (s[i] == '-' || _digit(s[i])) return _number(p, i);
    if (s[i] == '"') return _string(p, i);
    if (!_char(p, i, &k, "Unexpected character")) return false;
    return _fail(p, i, SE "Unexpected character: %s.", _char_desc(p, i, b));
}

/* ---- the parser ---- */

/* A kind as graphql-js names it: "}" for a punctuator (into buf). */
static const char *_kind_desc(int kind, char buf[8])
{
    static const char *const names[128] = {
        [T_EOF] = "<EOF>",     [T_NAME] = "Name",         [T_INT] = "Int",  [T_FLOAT] = "Float",
        [T_STRING] = "String", [T_BLOCK] = "BlockString", ['.'] = "\"...\""};
    if (names[kind]) return names[kind];
    snprintf(buf, 8, "\"%c\"", kind);
    return buf;
}

/* The current token as graphql-js describes it: "}", <EOF>, Name "x". */
static const char *_tok_desc(const parser *p, char buf[96])
{
    const token *t = &p->tok;
    if (!t->kind || !strchr("NIFSB", t->kind)) return _kind_desc(t->kind, buf);
    const char *v = t->str ? t->str : p->src + t->start;
    size_t n = t->str ? strlen(t->str) : t->end - t->start, cut = n > 40 ? 40 : n;
    while (cut < n && cut > 0 && ((unsigned char)v[cut] & 0xC0) == 0x80) /* whole characters */
        cut--;
    snprintf(buf, 96, "%s \"%.*s%s\"", _kind_desc(t->kind, NULL), (int)cut, v,
             cut < n ? "..." : "");
    return buf;
}

/* "Expected <what>, found <the token>.", or "Unexpected <the token>." */
static bool _expected(parser *p, const char *what)
{
    char b[96];
    if (!what) return _fail(p, p->tok.start, SE "Unexpected %s.", _tok_desc(p, b));
    return _fail(p, p->tok.start, SE "Expected %s, found %s.", what, _tok_desc(p, b));
}
#define _unexpected(p) _expected(p, NULL)

static bool _expect(parser *p, int kind)
{
    char b[8];
    return p->tok.kind == kind ? _advance(p) : _expected(p, _kind_desc(kind, b));
}

static bool _is_kw(const parser *p, const char *kw)
{
    size_t n = strlen(kw);
    return p->tok.kind == T_NAME && p->tok.end - p->tok.start == n &&
           memcmp(p->src + p->tok.start, kw, n) == 0;
}

/* The current token's text, copied; then the next token. */
static bool _text(parser *p, const char **out)
{
    *out = _strndup(p, p->src + p->tok.start, p->tok.end - p->tok.start);
    return _advance(p);
}

static bool _name(parser *p, const char **out)
{
    return p->tok.kind == T_NAME ? _text(p, out) : _expected(p, "Name");
}

/* A zeroed node counted against max_nodes, or NULL after the error. */
static void *_node(parser *p, size_t size)
{
    if (++p->nodes > p->max_nodes) {
        _fail(p, p->tok.start, "Document too complex: more than %u nodes.", p->max_nodes);
        return NULL;
    }
    return _alloc(&p->arena, size);
}

/* One level deeper (the caller's p->depth-- on the way out). */
static bool _enter(parser *p)
{
    if (++p->depth <= p->max_depth) return true;
    return _fail(p, p->tok.start, "Document nested too deeply: more than %u levels.", p->max_depth);
}

static bool _value(parser *p, bool is_const, gql_value **out);

/* ListValue [ Value* ] or ObjectValue { (Name : Value)* } into v. */
static bool _compound(parser *p, bool is_const, gql_value *v)
{
    bool obj = p->tok.kind == '{';
    int close = obj ? '}' : ']';
    gql_value **tail = &v->items;
    v->kind = obj ? GQL_V_OBJECT : GQL_V_LIST;
    if (!_enter(p) || !_advance(p)) return false;
    while (p->tok.kind != close) {
        const char *name = NULL;
        size_t at = p->tok.start;
        if (obj && (!_name(p, &name) || !_expect(p, ':'))) return false;
        for (gql_value *o = obj ? v->items : NULL; o; o = o->next)
            if (strcmp(o->name, name) == 0)
                return _fail(p, at, "There can be only one input field named \"%.64s\".", name);
        if (!_value(p, is_const, tail)) return false;
        (*tail)->name = name;
        tail = &(*tail)->next;
    }
    p->depth--;
    return _advance(p);
}

/* Value[?Const]: a constant one (a default) has no variable. */
static bool _value(parser *p, bool is_const, gql_value **out)
{
    gql_value *v = _node(p, sizeof(*v));
    size_t at = p->tok.start;
    if (!v) return false;
    *out = v;
    switch (p->tok.kind) {
    case '$':
        v->kind = GQL_V_VAR;
        if (!_advance(p) || !_name(p, &v->text)) return false;
        return !is_const ||
               _fail(p, at, SE "Unexpected variable \"$%.64s\" in constant value.", v->text);
    case T_INT:
    case T_FLOAT:
        v->kind = p->tok.kind == T_INT ? GQL_V_INT : GQL_V_FLOAT;
        return _text(p, &v->text);
    case T_STRING:
    case T_BLOCK:
        v->kind = GQL_V_STRING;
        v->text = p->tok.str;
        return _advance(p);
    case T_NAME:
        v->boolean = _is_kw(p, "true");
        v->kind = v->boolean || _is_kw(p, "false") ? GQL_V_BOOL : GQL_V_ENUM;
        if (_is_kw(p, "null")) v->kind = GQL_V_NULL;
        return v->kind == GQL_V_ENUM ? _text(p, &v->text) : _advance(p);
    case '[':
    case '{':
        return _compound(p, is_const, v);
    default:
        return _unexpected(p);
    }
}

/* Arguments[?Const]: ( (Name : Value)+ ), or nothing. */
static bool _args(parser *p, bool is_const, gql_arg **out)
{
    if (p->tok.kind != '(') return true;
    if (!_advance(p)) return false;
    do {
        gql_arg *a = _node(p, sizeof(*a));
        if (!a) return false;
        a->line = p->tok.line;
        a->col = p->tok.col;
        *out = a;
        out = &a->next;
        if (!_name(p, &a->name) || !_expect(p, ':') || !_value(p, is_const, &a->value))
            return false;
    } while (p->tok.kind != ')');
    return _advance(p);
}

/* Directives[?Const]: (@ Name Arguments?)*. */
static bool _directives(parser *p, bool is_const, gql_directive **out)
{
    while (p->tok.kind == '@') {
        gql_directive *d = _node(p, sizeof(*d));
        if (!d) return false;
        d->line = p->tok.line;
        d->col = p->tok.col;
        *out = d;
        out = &d->next;
        if (!_advance(p) || !_name(p, &d->name) || !_args(p, is_const, &d->args)) return false;
    }
    return true;
}

/* Type: Name, [ Type ], either followed by "!". */
static bool _type(parser *p, gql_type **out)
{
    gql_type *t = _node(p, sizeof(*t));
    if (!t) return false;
    *out = t;
    if (p->tok.kind == '[') {
        if (!_enter(p) || !_advance(p) || !_type(p, &t->of) || !_expect(p, ']')) return false;
        p->depth--;
    } else if (!_name(p, &t->name)) {
        return false;
    }
    if (p->tok.kind != '!') return true;
    t->non_null = true;
    return _advance(p);
}

static bool _selection(parser *p, gql_sel **out);

/* SelectionSet: { Selection+ }. */
static bool _selset(parser *p, gql_sel **out)
{
    if (p->tok.kind != '{') return _expected(p, "\"{\"");
    if (!_enter(p) || !_advance(p)) return false;
    do {
        if (!_selection(p, out)) return false;
        out = &(*out)->next;
    } while (p->tok.kind != '}');
    p->depth--;
    return _advance(p);
}

/* Field: (Alias :)? Name Arguments? Directives? SelectionSet?;
 * FragmentSpread: ... Name Directives? (the name not "on");
 * InlineFragment: ... (on Name)? Directives? SelectionSet. */
static bool _selection(parser *p, gql_sel **out)
{
    gql_sel *s = _node(p, sizeof(*s));
    if (!s) return false;
    s->line = p->tok.line;
    s->col = p->tok.col;
    *out = s;
    if (p->tok.kind == '.') {
        if (!_advance(p)) return false;
        if (p->tok.kind == T_NAME && !_is_kw(p, "on")) {
            s->kind = GQL_SEL_SPREAD;
            return _name(p, &s->name) && _directives(p, false, &s->directives);
        }
        s->kind = GQL_SEL_INLINE;
        if (_is_kw(p, "on") && !(_advance(p) && _name(p, &s->type_cond))) return false;
        return _directives(p, false, &s->directives) && _selset(p, &s->sels);
    }
    s->kind = GQL_SEL_FIELD;
    if (!_name(p, &s->name)) return false;
    if (p->tok.kind == ':') {
        s->alias = s->name;
        if (!_advance(p) || !_name(p, &s->name)) return false;
    }
    if (!_args(p, false, &s->args) || !_directives(p, false, &s->directives)) return false;
    return p->tok.kind == '{' ? _selset(p, &s->sels) : true;
}

/* VariableDefinitions: ( ($ Name : Type (= Value[Const])? Directives[Const]?)+ ),
 * or nothing. A definition's directives are parsed (and counted) only. */
static bool _vardefs(parser *p, gql_vardef **out)
{
    if (p->tok.kind != '(') return true;
    if (!_advance(p)) return false;
    do {
        gql_vardef *v = _node(p, sizeof(*v));
        gql_directive *dropped = NULL;
        if (!v) return false;
        v->line = p->tok.line;
        v->col = p->tok.col;
        *out = v;
        out = &v->next;
        if (!_expect(p, '$') || !_name(p, &v->name) || !_expect(p, ':') || !_type(p, &v->type))
            return false;
        if (p->tok.kind == '=' && !(_advance(p) && _value(p, true, &v->def))) return false;
        if (!_directives(p, true, &dropped)) return false;
    } while (p->tok.kind != ')');
    return _advance(p);
}

/* OperationDefinition: SelectionSet, or
 * OperationType Name? VariableDefinitions? Directives? SelectionSet. */
static bool _operation(parser *p, gql_op **out)
{
    gql_op *op = _alloc(&p->arena, sizeof(*op));
    op->line = p->tok.line;
    op->col = p->tok.col;
    *out = op;
    if (p->tok.kind == T_NAME) {
        op->kind = _is_kw(p, "mutation")       ? GQL_OP_MUTATION
                   : _is_kw(p, "subscription") ? GQL_OP_SUBSCRIPTION
                                               : GQL_OP_QUERY;
        if (!_advance(p)) return false;
        if (p->tok.kind == T_NAME && !_name(p, &op->name)) return false;
        if (!_vardefs(p, &op->vars) || !_directives(p, false, &op->directives)) return false;
    }
    return _selset(p, &op->sels);
}

/* FragmentDefinition: fragment Name on Name Directives? SelectionSet, the
 * first name not "on". */
static bool _fragment(parser *p, gql_frag **out)
{
    gql_frag *f = _alloc(&p->arena, sizeof(*f));
    f->line = p->tok.line;
    f->col = p->tok.col;
    *out = f;
    if (!_advance(p)) return false;
    if (_is_kw(p, "on")) return _unexpected(p);
    if (!_name(p, &f->name)) return false;
    if (!_is_kw(p, "on")) return _expected(p, "\"on\"");
    return _advance(p) && _name(p, &f->type_cond) && _directives(p, false, &f->directives) &&
           _selset(p, &f->sels);
}

/* Document: (OperationDefinition | FragmentDefinition)+, at least one
 * operation, fragment names distinct. */
static bool _document(parser *p, gql_doc *doc)
{
    gql_op **op = &doc->ops;
    gql_frag **frag = &doc->frags;
    if (!_advance(p)) return false;
    do {
        size_t at = p->tok.start;
        if (p->tok.kind == '{' || _is_kw(p, "query") || _is_kw(p, "mutation") ||
            _is_kw(p, "subscription")) {
            if (!_operation(p, op)) return false;
            op = &(*op)->next;
        } else if (_is_kw(p, "fragment")) {
            if (!_fragment(p, frag)) return false;
            if (gql_doc_fragment(doc, (*frag)->name) != *frag)
                return _fail(p, at, "There can be only one fragment named \"%.64s\".",
                             (*frag)->name);
            frag = &(*frag)->next;
        } else {
            return _unexpected(p);
        }
    } while (p->tok.kind != T_EOF);
    if (!doc->ops) return _fail(p, NOWHERE, "Must provide an operation.");
    return true;
}

bool gql_parse(const char *src, size_t len, const gql_limits *lim, gql_doc **out,
               gql_parse_error *err)
{
    gql_parse_error spare;
    if (!err) err = &spare;
    if (!lim) lim = &gql_default_limits;
    *out = NULL;
    memset(err, 0, sizeof(*err));
    if (len > lim->max_bytes) {
        snprintf(err->msg, sizeof(err->msg), "Document too large: %zu bytes (limit %zu).", len,
                 lim->max_bytes);
        return false;
    }
    parser p = {.src = src, .len = len, .loc_line = 1, .loc_col = 1, .err = err};
    p.max_depth = lim->max_depth < DEPTH_CAP ? lim->max_depth : DEPTH_CAP;
    p.max_nodes = lim->max_nodes;
    p.sc = ts_malloc(p.sc_cap = 256);
    gql_doc *doc = _alloc(&p.arena, sizeof(*doc));
    bool ok = _document(&p, doc);
    free(p.sc);
    if (!ok) {
        _arena_free(p.arena);
        return false;
    }
    doc->arena = p.arena; /* every chunk: the list grows at its head */
    *out = doc;
    return true;
}

void gql_doc_free(gql_doc *doc)
{
    if (doc) _arena_free(doc->arena);
}

const gql_frag *gql_doc_fragment(const gql_doc *doc, const char *name)
{
    for (const gql_frag *f = doc ? doc->frags : NULL; f; f = f->next)
        if (strcmp(f->name, name) == 0) return f;
    return NULL;
}
