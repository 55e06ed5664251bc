/* Unit tests: Backend.AI's filter and order arguments (gql_filter.h): what
 * matches, precedence, the value forms, order by several fields with nulls
 * last, and every malformed form refused with a message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "services/gateway/gql_filter.h"

#include <stdlib.h>
#include <string.h>

static const char *ITEMS =
    "[{\"name\": \"alpha\", \"usage_mode\": \"model\", \"status\": \"RUNNING\", \"priority\": 10,"
    "  \"tags\": [\"x\", \"y\"], \"note\": null},"
    " {\"name\": \"Beta\", \"usage_mode\": \"general\", \"status\": \"PENDING\", \"priority\": 5,"
    "  \"tags\": [], \"note\": \"n\"},"
    " {\"name\": \"gamma\", \"usage_mode\": \"general\", \"status\": \"TERMINATED\", \"priority\": "
    "10,"
    "  \"tags\": [\"y\"], \"note\": null}]";

/* The names of the items text matches, comma-separated (static buffer). */
static const char *matching(const char *text)
{
    static char out[256];
    ts_err err = {{0}};
    gql_filter *f = gql_filter_parse(text, &err);
    if (!f) {
        print_error("refused %s: %s\n", text, err.msg);
        fail();
    }
    json_t *items = json_loads(ITEMS, 0, NULL);
    out[0] = '\0';
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) if (gql_filter_match(f, it))
    {
        if (out[0]) strcat(out, ",");
        strcat(out, json_string_value(json_object_get(it, "name")));
    }
    json_decref(items);
    gql_filter_free(f);
    return out;
}

static void test_matches(void **state)
{
    (void)state;
    /* Backend.AI's enums are upper case: == ignores case */
    assert_string_equal(matching("usage_mode == \"MODEL\""), "alpha");
    assert_string_equal(matching("(usage_mode == \"MODEL\")"), "alpha");
    assert_string_equal(matching("usage_mode != 'model'"), "Beta,gamma");
    assert_string_equal(matching("status in [\"RUNNING\", \"PENDING\"]"), "alpha,Beta");
    assert_string_equal(matching("status not in [\"RUNNING\"]"), "Beta,gamma");
    assert_string_equal(matching("priority >= 10"), "alpha,gamma");
    assert_string_equal(matching("priority < 10"), "Beta");
    assert_string_equal(matching("priority == \"5\""), "Beta");
    assert_string_equal(matching("name ilike \"%A\""), "alpha,Beta,gamma");
    assert_string_equal(matching("name like \"%a\""), "alpha,Beta,gamma");
    assert_string_equal(matching("name like \"b%\""), "");
    assert_string_equal(matching("name like \"_eta\""), "Beta");
    assert_string_equal(matching("tags contains \"y\""), "alpha,gamma");
    assert_string_equal(matching("name contains \"amm\""), "gamma");
    assert_string_equal(matching("note isnull"), "alpha,gamma");
    assert_string_equal(matching("note notnull"), "Beta");
    assert_string_equal(matching("missing isnull"), "alpha,Beta,gamma");
    assert_string_equal(matching("note == null"), "alpha,gamma");
    /* & binds tighter than | */
    assert_string_equal(matching("name == \"beta\" | priority == 10 & status == \"RUNNING\""),
                        "alpha,Beta");
    assert_string_equal(matching("(name == \"beta\" | priority == 10) & status == \"RUNNING\""),
                        "alpha");
    assert_string_equal(matching("name == \"a\\\"b\""), "");
}

static void refused(const char *text, const char *needle)
{
    ts_err err = {{0}};
    gql_filter *f = gql_filter_parse(text, &err);
    if (f || !strstr(err.msg, needle)) {
        print_error("%s: got %s \"%s\", wanted a refusal with \"%s\"\n", text ? text : "(null)",
                    f ? "a filter" : "the refusal", err.msg, needle);
        gql_filter_free(f);
        fail();
    }
}

static void test_refusals(void **state)
{
    (void)state;
    refused(NULL, "at most");
    refused("", "field name");
    refused("name ==", "value expected");
    refused("== 1", "field name");
    refused("name == \"x", "unterminated");
    refused("(name == 1", "')'");
    refused("name in 1", "list");
    refused("name == [1]", "list");
    refused("name in [[1]]", "plain values");
    refused("name == 1 junk", "unexpected");
    refused("name ~ 1", "operator");
    refused("name == nothing", "value");
    char deep[200] = "";
    for (int i = 0; i < 20; i++)
        strcat(deep, "(");
    strcat(deep, "a == 1");
    for (int i = 0; i < 20; i++)
        strcat(deep, ")");
    refused(deep, "nested too deep");
    char many[2000] = "a == 1";
    for (int i = 0; i < 70; i++)
        strcat(many, " & a == 1");
    refused(many, "too many terms");
    char *big = malloc(1100);
    memset(big, 'a', 1099);
    big[1099] = '\0';
    refused(big, "at most");
    free(big);
}

static char *names_after_order(const char *order, bool *ok)
{
    json_t *items = json_loads(ITEMS, 0, NULL);
    ts_err err = {{0}};
    *ok = gql_order_sort(items, order, &err);
    char *out = calloc(1, 256);
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        if (out[0]) strcat(out, ",");
        strcat(out, json_string_value(json_object_get(it, "name")));
    }
    json_decref(items);
    return out;
}

static void test_order(void **state)
{
    (void)state;
    bool ok;
    char *s = names_after_order("-priority,name", &ok);
    assert_true(ok);
    assert_string_equal(s, "alpha,gamma,Beta");
    free(s);
    s = names_after_order("+priority", &ok);
    assert_true(ok);
    assert_string_equal(strstr(s, "Beta") == s ? "Beta" : s, "Beta");
    free(s);
    s = names_after_order("note desc", &ok); /* nulls last either way */
    assert_true(ok);
    assert_true(strncmp(s, "Beta", 4) == 0);
    free(s);
    static const char *const bad[] = {"", "-", "name,", "1abc", "name junk", "a,b,c,d,e,f,g,h,i"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        s = names_after_order(bad[i], &ok);
        assert_false(ok);
        assert_string_equal(s, "alpha,Beta,gamma"); /* unchanged */
        free(s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
