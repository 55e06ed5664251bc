/* Unit tests: the GraphQL document parser (gql_parse.h). Documents of the
 * shapes Backend.AI's clients send (session lists with variables, mutations
 * with props, aliases, fragments, inline fragments, directives), values of
 * every kind as defaults, strings (escapes, surrogate pairs, block strings'
 * indentation rule), ignored tokens and line/column counting; then every
 * error: syntax, lexical (escapes, UTF-8, control characters, numbers),
 * document rules (an operation, distinct fragments, constant defaults,
 * distinct input fields) and the limits (size, depth by selections and by
 * values, nodes). Run under ASan too (`make asan`): an error frees all. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "services/gateway/gql_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static gql_doc *parse_ok(const char *src)
{
    gql_doc *doc = NULL;
    gql_parse_error err;
    if (!gql_parse(src, strlen(src), NULL, &doc, &err))
        fail_msg("refused (%u:%u %s): %s", err.line, err.col, err.msg, src);
    assert_non_null(doc);
    return doc;
}

typedef struct bad_case {
    const char *src;
    unsigned line, col;
    const char *msg;
} bad_case;

/* Each source (NUL-terminated; strlen is its length) refused with that
 * message at that place. */
static void expect_bad(const bad_case *cases, size_t n, const gql_limits *lim)
{
    for (size_t i = 0; i < n; i++) {
        gql_doc *doc = (gql_doc *)1;
        gql_parse_error err;
        if (gql_parse(cases[i].src, strlen(cases[i].src), lim, &doc, &err))
            fail_msg("accepted: %s", cases[i].src);
        assert_null(doc);
        if (strcmp(err.msg, cases[i].msg) != 0 || err.line != cases[i].line ||
            err.col != cases[i].col)
            fail_msg("%s\n  got  %u:%u %s\n  want %u:%u %s", cases[i].src, err.line, err.col,
                     err.msg, cases[i].line, cases[i].col, cases[i].msg);
    }
}

static const gql_sel *nth_sel(const gql_sel *s, int n)
{
    while (s && n-- > 0)
        s = s->next;
    assert_non_null(s);
    return s;
}

static const gql_arg *arg_named(const gql_sel *s, const char *name)
{
    for (const gql_arg *a = s->args; a; a = a->next)
        if (strcmp(a->name, name) == 0) return a;
    fail_msg("no argument %s", name);
    return NULL;
}

static int count_sels(const gql_sel *s)
{
    int n = 0;
    for (; s; s = s->next)
        n++;
    return n;
}

static void test_session_list_query(void **state)
{
    (void)state;
    gql_doc *doc = parse_ok(
        "query($limit:Int!, $offset:Int!, $ak:String, $group_id:String, $status:String) {\n"
        "  compute_session_list(limit:$limit, offset:$offset, access_key:$ak,\n"
        "                       group_id:$group_id, status:$status) {\n"
        "    items { id name containers {live_stat last_stat} } total_count } }");
    const gql_op *op = doc->ops;
    assert_int_equal(op->kind, GQL_OP_QUERY);
    assert_null(op->name);
    assert_null(op->next);
    assert_null(doc->frags);
    const char *names[] = {"limit", "offset", "ak", "group_id", "status"};
    const gql_vardef *v = op->vars;
    for (size_t i = 0; i < TS_ARRAY_LEN(names); i++, v = v->next) {
        assert_non_null(v);
        assert_string_equal(v->name, names[i]);
        assert_string_equal(v->type->name, i < 2 ? "Int" : "String");
        assert_int_equal(v->type->non_null, i < 2);
        assert_null(v->def);
    }
    assert_null(v);
    assert_int_equal(op->vars->next->col, 20);
    const gql_sel *list = op->sels;
    assert_int_equal(list->kind, GQL_SEL_FIELD);
    assert_string_equal(list->name, "compute_session_list");
    assert_null(list->alias);
    assert_int_equal(list->line, 2);
    assert_int_equal(list->col, 3);
    const gql_arg *ak = arg_named(list, "access_key");
    assert_int_equal(ak->value->kind, GQL_V_VAR);
    assert_string_equal(ak->value->text, "ak");
    assert_int_equal(arg_named(list, "status")->line, 3);
    assert_int_equal(count_sels(list->sels), 2);
    const gql_sel *items = list->sels;
    assert_string_equal(items->name, "items");
    assert_int_equal(count_sels(items->sels), 3);
    const gql_sel *containers = nth_sel(items->sels, 2);
    assert_string_equal(containers->name, "containers");
    assert_string_equal(nth_sel(containers->sels, 1)->name, "last_stat");
    assert_null(nth_sel(containers->sels, 1)->sels);
    assert_string_equal(nth_sel(list->sels, 1)->name, "total_count");
    gql_doc_free(doc);
}

static void test_mutations(void **state)
{
    (void)state;
    gql_doc *doc =
        parse_ok("mutation($access_key: String!, $input: ModifyKeyPairInput!) {\n"
                 "  modify_keypair(access_key: $access_key, props: $input) { ok msg }\n"
                 "}\n"
                 "mutation CreateUser($email: String!, $props: UserInput!) {\n"
                 "  create_user(email: $email, props: $props) { ok msg user { id email } }\n"
                 "}\n"
                 "subscription Events { session_events { id } }");
    const gql_op *op = doc->ops;
    assert_int_equal(op->kind, GQL_OP_MUTATION);
    assert_null(op->name);
    assert_string_equal(arg_named(op->sels, "props")->value->text, "input");
    op = op->next;
    assert_int_equal(op->kind, GQL_OP_MUTATION);
    assert_string_equal(op->name, "CreateUser");
    assert_int_equal(op->line, 4);
    assert_int_equal(op->col, 1);
    assert_string_equal(op->vars->next->type->name, "UserInput");
    assert_string_equal(nth_sel(op->sels->sels, 2)->sels->next->name, "email");
    op = op->next;
    assert_int_equal(op->kind, GQL_OP_SUBSCRIPTION);
    assert_string_equal(op->name, "Events");
    assert_null(op->next);
    gql_doc_free(doc);
}

static void test_aliases_fragments_directives(void **state)
{
    (void)state;
    gql_doc *doc =
        parse_ok("query Agents($stats: Boolean = false) @live {\n"
                 "  a1: agent(agent_id: \"i-1\") { ...AgentFields @defer }\n"
                 "  a2: agent(agent_id: \"i-2\") @include(if: $stats) @mark {\n"
                 "    ... on Agent { status }\n"
                 "    ... @skip(if: true) { region }\n"
                 "    ... { addr }\n"
                 "  }\n"
                 "}\n"
                 "fragment AgentFields on Agent @frag(x: 1) { id status_changed ...More }\n"
                 "fragment More on Agent { occupied_slots }\n");
    const gql_op *op = doc->ops;
    assert_string_equal(op->name, "Agents");
    assert_string_equal(op->directives->name, "live");
    assert_null(op->directives->args);
    const gql_sel *a1 = op->sels, *a2 = a1->next;
    assert_string_equal(a1->alias, "a1");
    assert_string_equal(a1->name, "agent");
    assert_string_equal(a1->args->value->text, "i-1");
    assert_int_equal(a1->sels->kind, GQL_SEL_SPREAD);
    assert_string_equal(a1->sels->name, "AgentFields");
    assert_string_equal(a1->sels->directives->name, "defer");
    assert_null(a1->sels->sels);
    assert_string_equal(a2->alias, "a2");
    const gql_directive *inc = a2->directives;
    assert_string_equal(inc->name, "include");
    assert_int_equal(inc->line, 3);
    assert_int_equal(inc->col, 30);
    assert_string_equal(inc->args->name, "if");
    assert_int_equal(inc->args->value->kind, GQL_V_VAR);
    assert_string_equal(inc->next->name, "mark");
    const gql_sel *in1 = a2->sels, *in2 = in1->next, *in3 = in2->next;
    assert_int_equal(in1->kind, GQL_SEL_INLINE);
    assert_string_equal(in1->type_cond, "Agent");
    assert_int_equal(in1->line, 4);
    assert_int_equal(in1->col, 5);
    assert_string_equal(in1->sels->name, "status");
    assert_int_equal(in2->kind, GQL_SEL_INLINE);
    assert_null(in2->type_cond);
    assert_string_equal(in2->directives->name, "skip");
    assert_int_equal(in2->directives->args->value->kind, GQL_V_BOOL);
    assert_true(in2->directives->args->value->boolean);
    assert_int_equal(in3->kind, GQL_SEL_INLINE);
    assert_null(in3->type_cond);
    assert_null(in3->directives);
    assert_string_equal(in3->sels->name, "addr");
    const gql_frag *f = gql_doc_fragment(doc, "AgentFields");
    assert_ptr_equal(f, doc->frags);
    assert_string_equal(f->type_cond, "Agent");
    assert_string_equal(f->directives->name, "frag");
    assert_int_equal(f->line, 9);
    assert_int_equal(count_sels(f->sels), 3);
    assert_ptr_equal(gql_doc_fragment(doc, "More"), doc->frags->next);
    assert_null(gql_doc_fragment(doc, "Missing"));
    assert_null(gql_doc_fragment(NULL, "More"));
    gql_doc_free(doc);
    gql_doc_free(NULL);

    /* A shorthand query; "on", "query", "true" and "fragment" as field names. */
    doc = parse_ok("{ on query: true fragment { null } }");
    assert_string_equal(doc->ops->sels->name, "on");
    assert_string_equal(doc->ops->sels->next->alias, "query");
    assert_string_equal(doc->ops->sels->next->name, "true");
    assert_string_equal(nth_sel(doc->ops->sels, 2)->sels->name, "null");
    gql_doc_free(doc);
}

static void test_value_kinds(void **state)
{
    (void)state;
    gql_doc *doc = parse_ok(
        "query($i: Int = -12, $z: Int = -0, $f: Float = 1.5e3, $g: [Float] = [0.5, 1E-2, 6e+3],"
        " $s: String = \"x\", $t: Boolean = true, $u: Boolean = false, $n: String = null,"
        " $e: Color = RED, $l: [[Int!]]! = [[1], []],"
        " $o: In = {a: 1, b: [true], c: {a: null}, d: {}} @deprecated(reason: \"no\")) { a }");
    const gql_vardef *v = doc->ops->vars;
    assert_int_equal(v->def->kind, GQL_V_INT);
    assert_string_equal(v->def->text, "-12");
    v = v->next;
    assert_string_equal(v->def->text, "-0");
    v = v->next;
    assert_int_equal(v->def->kind, GQL_V_FLOAT);
    assert_string_equal(v->def->text, "1.5e3");
    v = v->next;
    assert_int_equal(v->def->kind, GQL_V_LIST);
    assert_string_equal(v->def->items->text, "0.5");
    assert_string_equal(v->def->items->next->text, "1E-2");
    assert_string_equal(v->def->items->next->next->text, "6e+3");
    assert_int_equal(v->def->items->next->next->kind, GQL_V_FLOAT);
    assert_null(v->def->items->name);
    v = v->next;
    assert_int_equal(v->def->kind, GQL_V_STRING);
    assert_string_equal(v->def->text, "x");
    v = v->next;
    assert_int_equal(v->def->kind, GQL_V_BOOL);
    assert_true(v->def->boolean);
    v = v->next;
    assert_int_equal(v->def->kind, GQL_V_BOOL);
    assert_false(v->def->boolean);
    v = v->next;
    assert_int_equal(v->def->kind, GQL_V_NULL);
    v = v->next;
    assert_int_equal(v->def->kind, GQL_V_ENUM);
    assert_string_equal(v->def->text, "RED");
    v = v->next;
    /* [[Int!]]! */
    assert_null(v->type->name);
    assert_true(v->type->non_null);
    assert_null(v->type->of->name);
    assert_false(v->type->of->non_null);
    assert_string_equal(v->type->of->of->name, "Int");
    assert_true(v->type->of->of->non_null);
    assert_string_equal(v->def->items->items->text, "1");
    assert_int_equal(v->def->items->next->kind, GQL_V_LIST);
    assert_null(v->def->items->next->items);
    v = v->next;
    const gql_value *o = v->def;
    assert_int_equal(o->kind, GQL_V_OBJECT);
    assert_string_equal(o->items->name, "a");
    assert_string_equal(o->items->next->name, "b");
    assert_int_equal(o->items->next->items->kind, GQL_V_BOOL);
    const gql_value *c = o->items->next->next;
    assert_string_equal(c->name, "c");
    assert_string_equal(c->items->name, "a"); /* another object: its own names */
    assert_int_equal(c->items->kind, GQL_V_NULL);
    assert_int_equal(c->next->kind, GQL_V_OBJECT);
    assert_null(c->next->items);
    assert_null(c->next->next);
    assert_null(v->next);
    gql_doc_free(doc);
}

static const char *string_arg(gql_doc **doc, const char *src)
{
    *doc = parse_ok(src);
    const gql_value *v = (*doc)->ops->sels->args->value;
    assert_int_equal(v->kind, GQL_V_STRING);
    return v->text;
}

static void test_strings(void **state)
{
    (void)state;
    static const struct {
        const char *src, *want;
    } cases[] = {
        {"{a(s: \"\")}", ""},
        {"{a(s: \"q\\\" b\\\\ s\\/ b\\b f\\f n\\n r\\r t\\t\")}", "q\" b\\ s/ b\b f\f n\n r\r t\t"},
        {"{a(s: \"caf\\u00e9 \\u00E9 \\u20AC\")}", "caf\xc3\xa9 \xc3\xa9 \xe2\x82\xac"},
        {"{a(s: \"\\uD83D\\uDE00!\")}", "\xf0\x9f\x98\x80!"}, /* a surrogate pair */
        {"{a(s: \"\\u{1F600}\\u{41}\")}", "\xf0\x9f\x98\x80"
                                          "A"}, /* 2021 braces */
        {"{a(s: \"caf\xc3\xa9 \xf0\x9f\x98\x80 \t tab\")}", "caf\xc3\xa9 \xf0\x9f\x98\x80 \t tab"},
        {"{a(s: \"# not a comment, \\\"\")}", "# not a comment, \""},
        /* block strings: the common indentation of lines after the first
         * goes, blank first and last lines go, \""" is """, \n stays */
        {"{a(s: \"\"\"\n    Hello,\n      World!\n\n    Yours,\n      GraphQL.\n  \"\"\")}",
         "Hello,\n  World!\n\nYours,\n  GraphQL."},
        {"{a(s: \"\"\"  first\n    second\n   third\"\"\")}", "  first\n second\nthird"},
        {"{a(s: \"\"\"a \\\"\"\" b \\n \"\" \"\"\")}", "a \"\"\" b \\n \"\" "},
        {"{a(s: \"\"\"\r\n  x\r\n\r\n  y\r  z\r\n\"\"\")}", "x\n\ny\nz"},
        {"{a(s: \"\"\"\n\t\tx\n\ty\n\"\"\")}", "\tx\ny"},
        {"{a(s: \"\"\"\"\"\")}", ""},
        {"{a(s: \"\"\"  \n   \n  \"\"\")}", ""},
        {"{a(s: \"\"\"\"x\"\"\")}", "\"x"},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(cases); i++) {
        gql_doc *doc;
        const char *got = string_arg(&doc, cases[i].src);
        if (strcmp(got, cases[i].want) != 0)
            fail_msg("%s\n  got  [%s]\n  want [%s]", cases[i].src, got, cases[i].want);
        gql_doc_free(doc);
    }
}

/* Whitespace, commas, comments, a BOM and all three line terminators;
 * columns count characters. */
static void test_ignored_tokens_and_places(void **state)
{
    (void)state;
    gql_doc *doc = parse_ok("\xef\xbb\xbf# caf\xc3\xa9 \xf0\x9f\x98\x80 comment\r\n"
                            "query Q,,, { ,a, # another\r"
                            "\tb\n"
                            "  \xef\xbb\xbf c(x: \"\xc3\xa9\xc3\xa9\", y: 1) }");
    const gql_op *op = doc->ops;
    assert_int_equal(op->line, 2);
    assert_int_equal(op->col, 1);
    const gql_sel *a = op->sels, *b = a->next, *c = b->next;
    assert_int_equal(a->line, 2);
    assert_int_equal(a->col, 15);
    assert_int_equal(b->line, 3);
    assert_int_equal(b->col, 2);
    assert_int_equal(c->line, 4);
    assert_int_equal(c->col, 5); /* the BOM is a character */
    assert_int_equal(c->args->next->line, 4);
    assert_int_equal(c->args->next->col, 16); /* "éé" is 2 columns */
    assert_null(c->next);
    gql_doc_free(doc);

    /* The source need not be NUL-terminated: only len bytes are read. */
    const char buf[] = {'{', 'a', '}', '{'};
    gql_parse_error err;
    assert_true(gql_parse(buf, 3, NULL, &doc, &err));
    gql_doc_free(doc);
    assert_false(gql_parse(buf, 4, NULL, &doc, &err));
    assert_string_equal(err.msg, "Syntax Error: Expected Name, found <EOF>.");
    assert_int_equal(err.col, 5);
    /* Nor may it hide a NUL. */
    assert_false(gql_parse("{a}\0{b}", 7, NULL, &doc, &err));
    assert_string_equal(err.msg, "Syntax Error: Unexpected character: U+0000.");
    assert_int_equal(err.col, 4);
}

static void test_syntax_errors(void **state)
{
    (void)state;
    static const bad_case cases[] = {
        {"", 1, 1, "Syntax Error: Unexpected <EOF>."},
        {"  # only a comment\n", 2, 1, "Syntax Error: Unexpected <EOF>."},
        {"{", 1, 2, "Syntax Error: Expected Name, found <EOF>."},
        {"{}", 1, 2, "Syntax Error: Expected Name, found \"}\"."},
        {"{ a", 1, 4, "Syntax Error: Expected Name, found <EOF>."},
        {"{ a { } }", 1, 7, "Syntax Error: Expected Name, found \"}\"."},
        {"query", 1, 6, "Syntax Error: Expected \"{\", found <EOF>."},
        {"query Q", 1, 8, "Syntax Error: Expected \"{\", found <EOF>."},
        {"query Q ()", 1, 10, "Syntax Error: Expected \"$\", found \")\"."},
        {"query Q ($a) { a }", 1, 12, "Syntax Error: Expected \":\", found \")\"."},
        {"query Q ($a: ) { a }", 1, 14, "Syntax Error: Expected Name, found \")\"."},
        {"query Q ($a: [Int) { a }", 1, 18, "Syntax Error: Expected \"]\", found \")\"."},
        {"query Q ($a: Int!!) { a }", 1, 18, "Syntax Error: Expected \"$\", found \"!\"."},
        {"query Q ($a: Int = ) { a }", 1, 20, "Syntax Error: Unexpected \")\"."},
        {"query Q { a } extra", 1, 15, "Syntax Error: Unexpected Name \"extra\"."},
        {"type Query { a: Int }", 1, 1, "Syntax Error: Unexpected Name \"type\"."},
        {"\"described\" query { a }", 1, 1, "Syntax Error: Unexpected String \"described\"."},
        {"{ a } }", 1, 7, "Syntax Error: Unexpected \"}\"."},
        {"{ a(): b }", 1, 5, "Syntax Error: Expected Name, found \")\"."},
        {"{ a(x) }", 1, 6, "Syntax Error: Expected \":\", found \")\"."},
        {"{ a(x: ) }", 1, 8, "Syntax Error: Unexpected \")\"."},
        {"{ a(x: 1 }", 1, 10, "Syntax Error: Expected Name, found \"}\"."},
        {"{ a(x: [1, 2) }", 1, 13, "Syntax Error: Unexpected \")\"."},
        {"{ a(x: {b 1}) }", 1, 11, "Syntax Error: Expected \":\", found Int \"1\"."},
        {"{ a(x: {1: 1}) }", 1, 9, "Syntax Error: Expected Name, found Int \"1\"."},
        {"{ a(x: $) }", 1, 9, "Syntax Error: Expected Name, found \")\"."},
        {"{ a: }", 1, 6, "Syntax Error: Expected Name, found \"}\"."},
        {"{ a @ }", 1, 7, "Syntax Error: Expected Name, found \"}\"."},
        {"{ a & b }", 1, 5, "Syntax Error: Expected Name, found \"&\"."},
        {"{ a | b }", 1, 5, "Syntax Error: Expected Name, found \"|\"."},
        {"{ ... }", 1, 7, "Syntax Error: Expected \"{\", found \"}\"."},
        {"{ ... on T }", 1, 12, "Syntax Error: Expected \"{\", found \"}\"."},
        {"{ ... on { a } }", 1, 10, "Syntax Error: Expected Name, found \"{\"."},
        {"{ ..F }", 1, 3, "Syntax Error: Unexpected character: \".\"."},
        {"{ a(x: 1.5 .5) }", 1, 12, "Syntax Error: Unexpected character: \".\"."},
        {"fragment", 1, 9, "Syntax Error: Expected Name, found <EOF>."},
        {"fragment F { a } { a }", 1, 12, "Syntax Error: Expected \"on\", found \"{\"."},
        {"fragment F T { a } { a }", 1, 12, "Syntax Error: Expected \"on\", found Name \"T\"."},
        {"fragment F on { a } { a }", 1, 15, "Syntax Error: Expected Name, found \"{\"."},
        {"fragment F on T { a } { a } (", 1, 29, "Syntax Error: Unexpected \"(\"."},
        {"{ a(x: 1) \"a very long string value that goes on and on and on\" }", 1, 11,
         "Syntax Error: Expected Name, found String \"a very long string value that goes on "
         "an...\"."},
        {"{ a(x: 1) \"\"\"block\"\"\" }", 1, 11,
         "Syntax Error: Expected Name, found BlockString \"block\"."},
        {"{ a(x: 1) 2.5 }", 1, 11, "Syntax Error: Expected Name, found Float \"2.5\"."},
        {"\n\n  {\r\n\r\n  a(\r\r x: ]", 7, 5, "Syntax Error: Unexpected \"]\"."},
    };
    expect_bad(cases, TS_ARRAY_LEN(cases), NULL);
}

static void test_lexical_errors(void **state)
{
    (void)state;
    static const bad_case cases[] = {
        /* strings */
        {"{ a(s: \"abc) }", 1, 15, "Syntax Error: Unterminated string."},
        {"{ a(s: \"abc\n\") }", 1, 12, "Syntax Error: Unterminated string."},
        {"{ a(s: \"abc\\", 1, 12, "Syntax Error: Invalid character escape sequence: \"\\\"."},
        {"{ a(s: \"\"\"abc\"\") }", 1, 19, "Syntax Error: Unterminated string."},
        {"{ a(s: \"\"\"abc\\\"\"\"", 1, 18, "Syntax Error: Unterminated string."},
        {"{ a(s: \"a\\x\") }", 1, 10, "Syntax Error: Invalid character escape sequence: \"\\x\"."},
        {"{ a(s: \"a\\U0041\") }", 1, 10,
         "Syntax Error: Invalid character escape sequence: \"\\U\"."},
        {"{ a(s: \"\\u12\") }", 1, 9, "Syntax Error: Invalid Unicode escape sequence: \"\\u12\"."},
        {"{ a(s: \"\\u00G0\") }", 1, 9,
         "Syntax Error: Invalid Unicode escape sequence: \"\\u00G0\"."},
        {"{ a(s: \"\\uD800\") }", 1, 9,
         "Syntax Error: Invalid Unicode escape sequence: \"\\uD800\"."},
        {"{ a(s: \"x\\uDE00\") }", 1, 10,
         "Syntax Error: Invalid Unicode escape sequence: \"\\uDE00\"."},
        {"{ a(s: \"\\uD83D\\u0041\") }", 1, 9,
         "Syntax Error: Invalid Unicode escape sequence: \"\\uD83D\"."},
        {"{ a(s: \"\\uD83Dx\") }", 1, 9,
         "Syntax Error: Invalid Unicode escape sequence: \"\\uD83D\"."},
        {"{ a(s: \"\\u{D800}\") }", 1, 9,
         "Syntax Error: Invalid Unicode escape sequence: \"\\u{D800}\"."},
        {"{ a(s: \"\\u{110000}\") }", 1, 9,
         "Syntax Error: Invalid Unicode escape sequence: \"\\u{110000}\"."},
        {"{ a(s: \"\\u{}\") }", 1, 9, "Syntax Error: Invalid Unicode escape sequence: \"\\u{}\"."},
        {"{ a(s: \"\\u{41\") }", 1, 9,
         "Syntax Error: Invalid Unicode escape sequence: \"\\u{41\"."},
        {"{ a(s: \"\\u0000\") }", 1, 9,
         "Syntax Error: Invalid Unicode escape sequence: \"\\u0000\" (NUL is not allowed)."},
        {"{ a(s: \"\\u{0}\") }", 1, 9,
         "Syntax Error: Invalid Unicode escape sequence: \"\\u{0}\" (NUL is not allowed)."},
        /* control characters and UTF-8, in and out of strings and comments */
        {"{ a(s: \"a\x01\") }", 1, 10, "Syntax Error: Invalid character within String: U+0001."},
        {"{ a(s: \"\"\"a\x1f\"\"\") }", 1, 12,
         "Syntax Error: Invalid character within String: U+001F."},
        {"{ a(s: \"a\x7f\") }", 1, 10, "Syntax Error: Invalid character within String: U+007F."},
        {"{ a\x07 }", 1, 4, "Syntax Error: Unexpected character: U+0007."},
        {"{ a } # bell \x07\n", 1, 14, "Syntax Error: Unexpected character: U+0007."},
        {"{ a\x0b }", 1, 4, "Syntax Error: Unexpected character: U+000B."},
        {"{ a \xff }", 1, 5, "Syntax Error: Invalid UTF-8 in the source."},
        {"{ a(s: \"\xc3\") }", 1, 9, "Syntax Error: Invalid UTF-8 in the source."},
        {"{ a(s: \"\xc0\xaf\") }", 1, 9, "Syntax Error: Invalid UTF-8 in the source."},
        {"{ a(s: \"\xed\xa0\x80\") }", 1, 9, "Syntax Error: Invalid UTF-8 in the source."},
        {"{ a(s: \"\xf4\x90\x80\x80\") }", 1, 9, "Syntax Error: Invalid UTF-8 in the source."},
        {"# caf\xc3\n{ a }", 1, 6, "Syntax Error: Invalid UTF-8 in the source."},
        {"{ caf\xc3\xa9 }", 1, 6, "Syntax Error: Unexpected character: U+00E9."},
        {"{ a(s: 'x') }", 1, 8, "Syntax Error: Unexpected character: \"'\"."},
        /* numbers */
        {"{ a(x: 01) }", 1, 9, "Syntax Error: Invalid number, unexpected digit after 0: \"1\"."},
        {"{ a(x: -01) }", 1, 10, "Syntax Error: Invalid number, unexpected digit after 0: \"1\"."},
        {"{ a(x: 1.) }", 1, 10, "Syntax Error: Invalid number, expected digit but got: \")\"."},
        {"{ a(x: .5) }", 1, 8, "Syntax Error: Unexpected character: \".\"."},
        {"{ a(x: 1e) }", 1, 10, "Syntax Error: Invalid number, expected digit but got: \")\"."},
        {"{ a(x: 1e+) }", 1, 11, "Syntax Error: Invalid number, expected digit but got: \")\"."},
        {"{ a(x: -) }", 1, 9, "Syntax Error: Invalid number, expected digit but got: \")\"."},
        {"{ a(x: -a) }", 1, 9, "Syntax Error: Invalid number, expected digit but got: \"a\"."},
        {"{ a(x: 1", 1, 9, "Syntax Error: Expected Name, found <EOF>."},
        {"{ a(x: 1.", 1, 10, "Syntax Error: Invalid number, expected digit but got: <EOF>."},
        {"{ a(x: 12abc) }", 1, 10, "Syntax Error: Invalid number, expected digit but got: \"a\"."},
        {"{ a(x: 0x1F) }", 1, 9, "Syntax Error: Invalid number, expected digit but got: \"x\"."},
        {"{ a(x: 1.5e3e) }", 1, 13, "Syntax Error: Invalid number, expected digit but got: \"e\"."},
        {"{ a(x: 1.5.3) }", 1, 11, "Syntax Error: Invalid number, expected digit but got: \".\"."},
        {"{ a(x: 1_000) }", 1, 9, "Syntax Error: Invalid number, expected digit but got: \"_\"."},
        {"{ a(x: 1\"s\") }", 1, 9, "Syntax Error: Expected Name, found String \"s\"."},
    };
    expect_bad(cases, TS_ARRAY_LEN(cases), NULL);
}

static void test_document_rules(void **state)
{
    (void)state;
    static const bad_case cases[] = {
        {"fragment F on T { a }", 0, 0, "Must provide an operation."},
        {"{ a } fragment F on T { a }\nfragment F on U { b }", 2, 1,
         "There can be only one fragment named \"F\"."},
        {"fragment on on T { a } { a }", 1, 10, "Syntax Error: Unexpected Name \"on\"."},
        {"query Q($a: Int = $b) { a }", 1, 19,
         "Syntax Error: Unexpected variable \"$b\" in constant value."},
        {"query Q($a: [In] = [{x: [$b]}]) { a }", 1, 26,
         "Syntax Error: Unexpected variable \"$b\" in constant value."},
        {"query Q($a: Int @dir(x: $b)) { a }", 1, 25,
         "Syntax Error: Unexpected variable \"$b\" in constant value."},
        {"{ a(x: {b: 1, c: 2, b: 3}) }", 1, 21, "There can be only one input field named \"b\"."},
        {"query Q($o: In = {a: {x: 1, x: 2}}) { a }", 1, 29,
         "There can be only one input field named \"x\"."},
    };
    expect_bad(cases, TS_ARRAY_LEN(cases), NULL);
    /* Variables are fine outside constants: arguments, directives of fields
     * and operations, fragments; the same name in two objects too. */
    gql_doc *doc = parse_ok("query Q($v: In) @d(x: $v) { a(x: [{a: $v, b: {a: $v}}]) @e(y: $v) }"
                            " fragment F on T @f(z: $v) { b(x: $v) }");
    const gql_value *list = doc->ops->sels->args->value;
    assert_int_equal(list->items->items->kind, GQL_V_VAR);
    assert_string_equal(list->items->items->text, "v");
    gql_doc_free(doc);
}

static char *repeat(const char *head, const char *unit, size_t n, const char *tail)
{
    size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
    char *s = malloc(hl + ul * n + tl + 1);
    assert_non_null(s);
    memcpy(s, head, hl);
    for (size_t i = 0; i < n; i++)
        memcpy(s + hl + i * ul, unit, ul);
    memcpy(s + hl + n * ul, tail, tl + 1);
    return s;
}

/* Parses with lim: true, or false with err->msg starting with want. */
static bool try_parse(const char *src, const gql_limits *lim, gql_parse_error *err)
{
    gql_doc *doc = NULL;
    bool ok = gql_parse(src, strlen(src), lim, &doc, err);
    gql_doc_free(doc);
    return ok;
}

static void test_size_limit(void **state)
{
    (void)state;
    gql_parse_error err;
    gql_limits lim = {.max_bytes = 5, .max_depth = 16, .max_nodes = 100};
    assert_true(try_parse("{ a }", &lim, &err));
    assert_false(try_parse("{ ab }", &lim, &err));
    assert_string_equal(err.msg, "Document too large: 6 bytes (limit 5).");
    assert_int_equal(err.line, 0);
    assert_int_equal(err.col, 0);
    /* The default: 64 KiB, checked before anything (this is no GraphQL). */
    char *big = repeat("", "\xff", 64 * 1024 + 1, "");
    assert_false(try_parse(big, NULL, &err));
    assert_string_equal(err.msg, "Document too large: 65537 bytes (limit 65536).");
    free(big);
}

static void test_depth_limit(void **state)
{
    (void)state;
    gql_parse_error err;
    /* Selection sets: 16 levels pass, 17 do not. */
    char *s = repeat("", "{a", 16, "");
    char *src = repeat(s, "}", 16, "");
    assert_true(try_parse(src, NULL, &err));
    free(s);
    free(src);
    s = repeat("", "{a", 17, "");
    src = repeat(s, "}", 17, "");
    assert_false(try_parse(src, NULL, &err));
    assert_string_equal(err.msg, "Document nested too deeply: more than 16 levels.");
    assert_int_equal(err.line, 1);
    assert_int_equal(err.col, 33);
    free(s);
    free(src);
    /* Lists and objects count with the selection set they are in. */
    s = repeat("{a(x: ", "[", 15, "");
    src = repeat(s, "]", 15, ")}");
    assert_true(try_parse(src, NULL, &err));
    free(s);
    free(src);
    s = repeat("{a(x: ", "[", 16, "");
    src = repeat(s, "]", 16, ")}");
    assert_false(try_parse(src, NULL, &err));
    assert_string_equal(err.msg, "Document nested too deeply: more than 16 levels.");
    assert_int_equal(err.col, 22);
    free(s);
    free(src);
    assert_false(try_parse("{a{b(x: {c: {d: 1}})}}",
                           &(gql_limits){.max_bytes = 100, .max_depth = 3, .max_nodes = 100},
                           &err));
    assert_int_equal(err.col, 13);
    /* List types too. */
    s = repeat("query($a: ", "[", 17, "Int");
    src = repeat(s, "]", 17, ") { a }");
    assert_false(try_parse(src, NULL, &err));
    assert_int_equal(err.col, 27);
    free(s);
    free(src);
    /* 100,000 "[" (or "{a") fail at once, whatever the limit asked: the
     * parser never recurses past DEPTH_CAP levels. */
    gql_limits huge = {.max_bytes = 1 << 20, .max_depth = 1000000, .max_nodes = 1000000};
    const char *units[] = {"[", "{a:", "[{a:"};
    for (size_t i = 0; i < TS_ARRAY_LEN(units); i++) {
        src = repeat("{a(x: ", units[i], 100000, "");
        clock_t t0 = clock();
        assert_false(try_parse(src, &huge, &err));
        assert_string_equal(err.msg, "Document nested too deeply: more than 256 levels.");
        assert_false(try_parse(
            src, &(gql_limits){.max_bytes = 1 << 20, .max_depth = 16, .max_nodes = 10000}, &err));
        assert_string_equal(err.msg, "Document nested too deeply: more than 16 levels.");
        assert_true(clock() - t0 < CLOCKS_PER_SEC);
        free(src);
    }
    src = repeat("", "{a", 100000, "");
    assert_false(try_parse(src, &huge, &err));
    assert_string_equal(err.msg, "Document nested too deeply: more than 256 levels.");
    free(src);
}

static void test_node_limit(void **state)
{
    (void)state;
    gql_parse_error err;
    gql_limits lim = {.max_bytes = 1 << 20, .max_depth = 16, .max_nodes = 7};
    /* a, b, c(x: [1, 2]) is 3 selections, 1 argument and 3 values. */
    assert_true(try_parse("{ a b c(x: [1, 2]) }", &lim, &err));
    assert_false(try_parse("{ a b c(x: [1, 2, 3]) }", &lim, &err));
    assert_string_equal(err.msg, "Document too complex: more than 7 nodes.");
    assert_int_equal(err.col, 19);
    /* Variable definitions, their types, defaults and directives count too. */
    assert_true(try_parse("query($v: [Int]) { a }", &lim, &err));
    lim.max_nodes = 4;
    assert_false(try_parse("query($v: [Int] = 1 @d) { a }", &lim, &err));
    assert_int_equal(err.col, 21);
    /* The default: 10,000. */
    char *src = repeat("{", "a ", 10000, "}");
    assert_true(try_parse(src, NULL, &err));
    free(src);
    src = repeat("{", "a ", 10001, "}");
    assert_false(try_parse(src, NULL, &err));
    assert_string_equal(err.msg, "Document too complex: more than 10000 nodes.");
    assert_int_equal(err.col, 20002);
    free(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_session_list_query),
        cmocka_unit_test(test_mutations),
        cmocka_unit_test(test_aliases_fragments_directives),
        cmocka_unit_test(test_value_kinds),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_ignored_tokens_and_places),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_lexical_errors),
        cmocka_unit_test(test_document_rules),
        cmocka_unit_test(test_size_limit),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_node_limit),
    };
    return cmocka_run_group_tests_name("gateway gql_parse", tests, NULL, NULL);
}
