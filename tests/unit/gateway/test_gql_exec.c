/* Unit tests: the GraphQL executor (gql_exec.h) over a small schema of its
 * own (books and their authors, resolvers answering from constants): the
 * language features, validation errors, variables, resolver errors with
 * path and location, and the result budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "services/gateway/gql_exec.h"

#include <stdlib.h>
#include <string.h>

static json_t *get_shout(gql_exec *ex, const json_t *src)
{
    (void)ex;
    const char *t = json_string_value(json_object_get(src, "title"));
    char buf[128];
    size_t i = 0;
    for (; t && t[i] && i < sizeof(buf) - 1; i++)
        buf[i] = (char)(t[i] >= 'a' && t[i] <= 'z' ? t[i] - 32 : t[i]);
    buf[i] = 0;
    return json_string(buf);
}

static const gql_object t_author = {"Author",
                                    (const gql_field_def[]){{.name = "name"}, {.name = NULL}}};
static const gql_object t_book = {"Book",
                                  (const gql_field_def[]){{.name = "id"},
                                                          {.name = "title"},
                                                          {.name = "shout", .get = get_shout},
                                                          {.name = "meta", .leaf = GQL_AS_JSONSTR},
                                                          {.name = "pages", .leaf = GQL_AS_STRING},
                                                          {.name = "author", .type = &t_author},
                                                          {.name = "tags"},
                                                          {.name = NULL}}};
static const gql_object t_result = {"Done",
                                    (const gql_field_def[]){{.name = "ok"}, {.name = NULL}}};

static json_t *books_json(void)
{
    return json_pack(
        "[{s:s, s:s, s:{s:i}, s:i, s:{s:s}, s:[s,s]}, {s:s, s:s, s:n, s:i, s:n, s:[]}]", "id", "b1",
        "title", "dune", "meta", "year", 1965, "pages", 412, "author", "name", "herbert", "tags",
        "sf", "classic", "id", "b2", "title", "emma", "meta", "pages", 300, "author", "tags");
}

static json_t *q_books(gql_exec *ex, const json_t *args)
{
    (void)ex;
    json_t *all = books_json();
    json_int_t limit = json_integer_value(json_object_get(args, "limit"));
    if (json_object_get(args, "limit"))
        while ((json_int_t)json_array_size(all) > limit)
            json_array_remove(all, json_array_size(all) - 1);
    return all;
}

static json_t *q_book(gql_exec *ex, const json_t *args)
{
    const char *id = json_string_value(json_object_get(args, "id"));
    json_t *all = books_json();
    size_t i;
    json_t *b;
    json_array_foreach(all, i, b) if (strcmp(json_string_value(json_object_get(b, "id")), id) == 0)
    {
        json_t *one = json_incref(b);
        json_decref(all);
        return one;
    }
    json_decref(all);
    gql_error(ex, "no book %s", id);
    return NULL;
}

static json_t *q_echo(gql_exec *ex, const json_t *args)
{
    (void)ex;
    return json_deep_copy(json_object_get(args, "v"));
}

static int done_count;
static json_t *m_done(gql_exec *ex, const json_t *args)
{
    (void)ex;
    (void)args;
    done_count++;
    return json_pack("{s:b}", "ok", true);
}

static const gql_root_field queries[] = {
    {"books", (const gql_arg_def[]){{"limit", GQL_INT, false}, {NULL, 0, false}}, &t_book, true,
     q_books},
    {"book", (const gql_arg_def[]){{"id", GQL_STRING, true}, {NULL, 0, false}}, &t_book, false,
     q_book},
    {"echo",
     (const gql_arg_def[]){{"v", GQL_JSONSTRING, false},
                           {"n", GQL_BIGINT, false},
                           {"u", GQL_UUID, false},
                           {"l", GQL_STRING_LIST, false},
                           {"b", GQL_BOOLEAN, false},
                           {"f", GQL_FLOAT, false},
                           {"i", GQL_INPUT, false},
                           {NULL, 0, false}},
     NULL, false, q_echo},
    {NULL, NULL, NULL, false, NULL}};
static const gql_root_field mutations[] = {
    {"done", (const gql_arg_def[]){{NULL, 0, false}}, &t_result, false, m_done},
    {NULL, NULL, NULL, false, NULL}};
static const char *const inputs[] = {"BookInput", NULL};
static const gql_schema schema = {queries, mutations, inputs};

/* Run query (variables: JSON text or NULL); the answer, and *valid. */
static json_t *run(const char *query, const char *variables, const char *op, bool *valid)
{
    json_t *vars = variables ? json_loads(variables, 0, NULL) : NULL;
    gql_request r = {query, strlen(query), vars, op};
    bool v;
    json_t *out = gql_execute(&schema, &r, NULL, valid ? valid : &v);
    json_decref(vars);
    return out;
}

/* The answer's data as compact JSON text (freed by the caller). */
static char *data_of(const char *query, const char *variables)
{
    json_t *a = run(query, variables, NULL, NULL);
    if (json_object_get(a, "errors")) {
        char *e = json_dumps(json_object_get(a, "errors"), JSON_COMPACT);
        print_error("unexpected errors: %s\n", e);
        free(e);
        fail();
    }
    char *s = json_dumps(json_object_get(a, "data"), JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(a);
    return s;
}

static void assert_data(const char *query, const char *variables, const char *expected)
{
    char *got = data_of(query, variables);
    json_t *g = json_loads(got, 0, NULL), *e = json_loads(expected, 0, NULL);
    if (!json_equal(g, e)) {
        print_error("got      %s\nexpected %s\n", got, expected);
        fail();
    }
    json_decref(g);
    json_decref(e);
    free(got);
}

/* The first error's message contains needle; data is null when !executed. */
static void assert_error(const char *query, const char *variables, const char *needle,
                         bool executed)
{
    bool valid;
    json_t *a = run(query, variables, NULL, &valid);
    json_t *errs = json_object_get(a, "errors");
    const char *msg = json_string_value(json_object_get(json_array_get(errs, 0), "message"));
    if (!msg || !strstr(msg, needle)) {
        char *all = json_dumps(a, JSON_COMPACT);
        print_error("wanted an error with \"%s\", got %s\n", needle, all);
        free(all);
        fail();
    }
    assert_int_equal(valid, executed);
    if (!executed) assert_true(json_is_null(json_object_get(a, "data")));
    json_decref(a);
}

static void test_fields_aliases_and_leaves(void **state)
{
    (void)state;
    assert_data(
        "{ books { id title } }", NULL,
        "{\"books\":[{\"id\":\"b1\",\"title\":\"dune\"},{\"id\":\"b2\",\"title\":\"emma\"}]}");
    assert_data(
        "query { first: books(limit: 1) { t: title shout meta pages author { name } tags } }", NULL,
        "{\"first\":[{\"t\":\"dune\",\"shout\":\"DUNE\",\"meta\":\"{\\\"year\\\":1965}\","
        "\"pages\":\"412\",\"author\":{\"name\":\"herbert\"},\"tags\":[\"sf\",\"classic\"]}]}");
    /* nulls stay null, whatever the leaf conversion */
    assert_data("{ book(id: \"b2\") { meta author { name } } }", NULL,
                "{\"book\":{\"meta\":null,\"author\":null}}");
    assert_data("{ __typename a: book(id: \"b1\") { __typename } }", NULL,
                "{\"__typename\":\"Query\",\"a\":{\"__typename\":\"Book\"}}");
}

static void test_fragments_and_directives(void **state)
{
    (void)state;
    const char *q = "query Q($yes: Boolean = true) { book(id: \"b1\") { ...F ... on Book { id } "
                    "... @include(if: $yes) { shout } title @skip(if: $yes) } } "
                    "fragment F on Book { title author { ...A } } fragment A on Author { name }";
    assert_data(q, NULL,
                "{\"book\":{\"title\":\"dune\",\"author\":{\"name\":\"herbert\"},\"id\":\"b1\","
                "\"shout\":\"DUNE\"}}");
    /* the title skipped but also asked through the fragment: present once */
    assert_data(q, "{\"yes\": false}",
                "{\"book\":{\"title\":\"dune\",\"author\":{\"name\":\"herbert\"},\"id\":\"b1\"}}");
    /* the same field twice merges its selections */
    assert_data("{ book(id: \"b1\") { author { name } author { __typename } } }", NULL,
                "{\"book\":{\"author\":{\"name\":\"herbert\",\"__typename\":\"Author\"}}}");
}

static void test_variables(void **state)
{
    (void)state;
    assert_data("query($n: Int = 1) { books(limit: $n) { id } }", NULL,
                "{\"books\":[{\"id\":\"b1\"}]}");
    assert_data("query($n: Int = 1) { books(limit: $n) { id } }", "{\"n\": 2}",
                "{\"books\":[{\"id\":\"b1\"},{\"id\":\"b2\"}]}");
    /* a variable not given: the argument counts as absent */
    assert_data("query($n: Int) { books(limit: $n) { id } }", "{}",
                "{\"books\":[{\"id\":\"b1\"},{\"id\":\"b2\"}]}");
    /* an explicit null of an optional argument (Backend.AI's Python client
     * sends filter: null, order: null): as if absent, in a variable or inline */
    assert_data("query($n: Int) { books(limit: $n) { id } }", "{\"n\": null}",
                "{\"books\":[{\"id\":\"b1\"},{\"id\":\"b2\"}]}");
    assert_data("{ books(limit: null) { id } }", NULL,
                "{\"books\":[{\"id\":\"b1\"},{\"id\":\"b2\"}]}");
    assert_data("{ echo(v: null) }", NULL, "{\"echo\":null}");
    assert_data("query($v: JSONString) { echo(v: $v) }", "{\"v\": \"{\\\"a\\\": [1]}\"}",
                "{\"echo\":{\"a\":[1]}}");
    assert_data("query($l: [String]) { echo(l: $l) }", "{\"l\": \"one\"}", "{\"echo\":null}");
    assert_data(
        "{ echo(v: \"[1, 2]\", n: \"12345678901\", u: \"0b7e1d2a-0000-4000-8000-000000000001\","
        " l: [\"a\"], b: true, f: 1.5, i: {x: 1}) }",
        NULL, "{\"echo\":[1,2]}");
    assert_error("query($n: Int!) { books(limit: $n) { id } }", NULL,
                 "Variable \"$n\" of required type \"Int!\" was not provided.", false);
    assert_error("query($n: Int!) { books(limit: $n) { id } }", "{\"n\": null}", "must not be null",
                 false);
    assert_error("query($n: Int) { books(limit: $n) { id } }", "{\"n\": \"x\"}",
                 "Variable \"$n\" got invalid value \"x\"", false);
    assert_error("query($n: Int) { books(limit: $n) { id } }", "{\"n\": 4294967296}", "32-bit",
                 false);
    assert_error("query($b: BookInput) { echo(i: $b) }", "{\"b\": 3}", "input object", false);
    assert_error("query($x: Nope) { echo(v: $x) }", NULL, "Unknown type \"Nope\".", false);
    assert_error("query($n: Int, $n: Int) { books(limit: $n) { id } }", NULL,
                 "There can be only one variable named \"$n\".", false);
}

static void test_argument_values(void **state)
{
    (void)state;
    assert_error("{ books(limit: \"2\") { id } }", NULL, "Int cannot represent", true);
    assert_error("{ echo(u: \"nope\") }", NULL, "UUID", true);
    assert_error("{ echo(v: \"{bad\") }", NULL, "invalid JSON", true);
    assert_error("{ echo(n: \"12x\") }", NULL, "BigInt", true);
    assert_error("{ echo(l: [1]) }", NULL, "[String]", true);
    assert_error("{ book(id: null) { id } }", NULL, "must not be null", true);
}

static void test_validation_errors(void **state)
{
    (void)state;
    assert_error("{ nope }", NULL, "Cannot query field \"nope\" on type \"Query\".", false);
    assert_error("{ books { nope } }", NULL, "Cannot query field \"nope\" on type \"Book\".",
                 false);
    assert_error("{ books }", NULL, "must have a selection of subfields", false);
    assert_error("{ books { id { x } } }", NULL, "must not have a selection", false);
    assert_error("{ book { id } }", NULL, "argument \"id\" is required", false);
    assert_error("{ books(bogus: 1) { id } }", NULL,
                 "Unknown argument \"bogus\" on field \"Query.books\".", false);
    assert_error("{ books(limit: 1, limit: 2) { id } }", NULL, "only one argument named", false);
    assert_error("{ books { id(x: 1) } }", NULL, "Unknown argument \"x\" on field \"Book.id\".",
                 false);
    assert_error("{ ...Nope }", NULL, "Unknown fragment \"Nope\".", false);
    assert_error("{ ...A } fragment A on Query { ...B } fragment B on Query { ...A }", NULL,
                 "Cannot spread fragment \"A\" within itself.", false);
    assert_error("{ books { ... on Author { name } } }", NULL, "can never be of type \"Author\"",
                 false);
    assert_error("{ books { ... on Ghost { id } } }", NULL, "Unknown type \"Ghost\".", false);
    assert_error("{ books { id } } fragment U on Book { id }", NULL,
                 "Fragment \"U\" is never used.", false);
    assert_error("query($x: Int) { books { id } }", NULL, "Variable \"$x\" is never used.", false);
    assert_error("{ books(limit: $x) { id } }", NULL, "Variable \"$x\" is not defined.", false);
    assert_error("{ books @nope { id } }", NULL, "Unknown directive \"@nope\".", false);
    assert_error("{ books @skip { id } }", NULL, "argument \"if\" of type \"Boolean!\" is required",
                 false);
    assert_error("{ __schema { types { name } } }", NULL, "introspection is not allowed", false);
    assert_error("{ __type(name: \"Book\") { name } }", NULL, "introspection is not allowed",
                 false);
    assert_error("subscription { books { id } }", NULL, "Subscriptions are not served", false);
    assert_error("{ books { id }", NULL, "Syntax Error", false);
    assert_error("", NULL, "Syntax Error", false);
}

static void test_operations(void **state)
{
    (void)state;
    bool valid;
    json_t *a = run("query A { books(limit: 1) { id } } query B { book(id: \"b2\") { title } }",
                    NULL, "B", &valid);
    assert_true(valid);
    char *s = json_dumps(json_object_get(a, "data"), JSON_COMPACT);
    assert_string_equal(s, "{\"book\":{\"title\":\"emma\"}}");
    free(s);
    json_decref(a);
    assert_error("query A { books { id } } query B { books { id } }", NULL,
                 "Must provide operation name", false);
    a = run("query A { books { id } }", NULL, "C", &valid);
    assert_false(valid);
    assert_non_null(strstr(json_string_value(json_object_get(
                               json_array_get(json_object_get(a, "errors"), 0), "message")),
                           "Unknown operation named \"C\"."));
    json_decref(a);
    /* mutations run their resolvers; a query naming a mutation does not */
    done_count = 0;
    assert_data("mutation { a: done { ok } b: done { ok __typename } }", NULL,
                "{\"a\":{\"ok\":true},\"b\":{\"ok\":true,\"__typename\":\"Done\"}}");
    assert_int_equal(done_count, 2);
    assert_error("{ done { ok } }", NULL, "Cannot query field \"done\" on type \"Query\".", false);
    assert_int_equal(done_count, 2);
}

static void test_resolver_error_has_path_and_location(void **state)
{
    (void)state;
    bool valid;
    json_t *a = run("{\n  ok: book(id: \"b1\") { id }\n  bad: book(id: \"zz\") { id }\n}", NULL,
                    NULL, &valid);
    assert_true(valid);
    char *d = json_dumps(json_object_get(a, "data"), JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_string_equal(d, "{\"ok\":{\"id\":\"b1\"},\"bad\":null}");
    free(d);
    json_t *e = json_array_get(json_object_get(a, "errors"), 0);
    assert_string_equal(json_string_value(json_object_get(e, "message")), "no book zz");
    char *loc = json_dumps(json_object_get(e, "locations"), JSON_COMPACT | JSON_PRESERVE_ORDER);
    char *path = json_dumps(json_object_get(e, "path"), JSON_COMPACT);
    assert_string_equal(loc, "[{\"line\":3,\"column\":3}]");
    assert_string_equal(path, "[\"bad\"]");
    free(loc);
    free(path);
    json_decref(a);
}

static void test_budget(void **state)
{
    (void)state;
    /* 2 books x 3 fields, spread through 12 levels of doubling fragments:
     * far more than the result may hold, refused before or while running,
     * never exhausting memory. */
    char q[8192];
    size_t n = (size_t)snprintf(q, sizeof(q), "{ books { ...F0 } }");
    for (int i = 0; i < 16; i++)
        n += (size_t)snprintf(q + n, sizeof(q) - n, " fragment F%d on Book { ...F%d ...F%d id }", i,
                              i + 1, i + 1);
    snprintf(q + n, sizeof(q) - n, " fragment F16 on Book { id title }");
    bool valid;
    json_t *a = run(q, NULL, NULL, &valid);
    const char *msg = json_string_value(
        json_object_get(json_array_get(json_object_get(a, "errors"), 0), "message"));
    /* merged by response key, the result is small: the validator's budget
     * is what refuses it */
    assert_non_null(msg);
    assert_non_null(strstr(msg, "too complex"));
    json_decref(a);
}

/* Each root field is a resolver's work: at most GQL_MAX_ROOT_FIELDS of them
 * (aliases count, __typename too). */
static void test_root_field_cap(void **state)
{
    (void)state;
    char q[4096];
    for (int n = GQL_MAX_ROOT_FIELDS; n <= GQL_MAX_ROOT_FIELDS + 1; n++) {
        size_t len = (size_t)snprintf(q, sizeof(q), "{");
        for (int i = 0; i < n; i++)
            len += (size_t)snprintf(q + len, sizeof(q) - len, " a%d: book(id: \"b1\") { id }", i);
        snprintf(q + len, sizeof(q) - len, " }");
        bool valid;
        json_t *a = run(q, NULL, NULL, &valid);
        if (n == GQL_MAX_ROOT_FIELDS) {
            assert_true(valid);
            assert_null(json_object_get(a, "errors"));
            assert_int_equal(json_object_size(json_object_get(a, "data")), (size_t)n);
        } else {
            assert_false(valid);
            assert_true(json_is_null(json_object_get(a, "data")));
            const char *msg = json_string_value(
                json_object_get(json_array_get(json_object_get(a, "errors"), 0), "message"));
            assert_non_null(strstr(msg, "root fields"));
        }
        json_decref(a);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields_aliases_and_leaves),
        cmocka_unit_test(test_fragments_and_directives),
        cmocka_unit_test(test_variables),
        cmocka_unit_test(test_argument_values),
        cmocka_unit_test(test_validation_errors),
        cmocka_unit_test(test_operations),
        cmocka_unit_test(test_resolver_error_has_path_and_location),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_root_field_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
