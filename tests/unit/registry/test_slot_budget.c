/* test_slot_budget.c: remaining = limit - using with unlimited slots, the
 * minimum of scopes, "Infinity" in JSON, and a preset's allocatability
 * (services/registry/slot_budget.h). */
#include "services/registry/slot_budget.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

static slots_t S(const char *text)
{
    slots_t s;
    ts_err err = {{0}};
    assert_true(slots_parse_text(&s, text, &err));
    return s;
}

static budget_t L(const char *json)
{
    json_error_t je;
    json_t *j = json_loads(json, 0, &je);
    assert_non_null(j);
    budget_t b;
    ts_err err = {{0}};
    assert_true(budget_from_limit(&b, j, &err));
    json_decref(j);
    return b;
}

/* The JSON text of budget_to_json over the four known slots. */
static void assert_json(const budget_t *b, const char *want)
{
    json_t *o = budget_to_json(b, BUDGET_KNOWN_SLOTS);
    char *got = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(got, want);
    free(got);
    json_decref(o);
}

static void test_no_limit_is_infinity(void **state)
{
    (void)state;
    budget_t b = L("{}");
    assert_json(&b, "{\"cpu\":\"Infinity\",\"cuda.device\":\"Infinity\",\"cuda.shares\":"
                    "\"Infinity\",\"mem\":\"Infinity\"}");
    ts_err err = {{0}};
    assert_true(budget_from_limit(&b, NULL, &err));
    assert_true(budget_allows(&b, &(slots_t){0}));
    slots_t big = S("cpu=100000 mem=1000g cuda.device=64");
    assert_true(budget_allows(&b, &big));
}

static void test_remaining_is_limit_minus_using(void **state)
{
    (void)state;
    budget_t lim = L("{\"cpu\": \"4\", \"mem\": \"8g\"}");
    slots_t using = S("cpu=1.5 mem=2g cuda.shares=0.5");
    budget_t r;
    budget_remaining(&lim, &using, &r);
    assert_json(&r, "{\"cpu\":\"2.5\",\"cuda.device\":\"Infinity\",\"cuda.shares\":"
                    "\"Infinity\",\"mem\":\"6442450944\"}");
}

static void test_remaining_floors_at_zero(void **state)
{
    (void)state;
    budget_t lim = L("{\"cpu\": 2}");
    slots_t using = S("cpu=3");
    budget_t r;
    budget_remaining(&lim, &using, &r);
    assert_int_equal(slots_get(&r.v, SLOT_CPU), 0);
    slots_t one = S("cpu=0.001");
    assert_false(budget_allows(&r, &one));
}

static void test_infinity_text_in_limit(void **state)
{
    (void)state;
    budget_t lim = L("{\"cpu\": \"Infinity\", \"mem\": \"1g\"}");
    slots_t using = S("cpu=1000 mem=1g");
    budget_t r;
    budget_remaining(&lim, &using, &r);
    assert_json(&r, "{\"cpu\":\"Infinity\",\"cuda.device\":\"Infinity\",\"cuda.shares\":"
                    "\"Infinity\",\"mem\":\"0\"}");
}

static void test_malformed_limit(void **state)
{
    (void)state;
    json_t *j = json_pack("{s:s}", "cpu", "lots");
    budget_t b;
    ts_err err = {{0}};
    assert_false(budget_from_limit(&b, j, &err));
    assert_true(err.msg[0] != '\0');
    json_decref(j);
    j = json_pack("{s:s}", "no such slot", "1");
    assert_false(budget_from_limit(&b, j, &err));
    json_decref(j);
    j = json_string("cpu=1");
    assert_false(budget_from_limit(&b, j, &err));
    json_decref(j);
}

static void test_min_of_scopes(void **state)
{
    (void)state;
    budget_t kp = L("{\"cpu\": \"8\"}");
    budget_t project = L("{\"cpu\": \"16\", \"mem\": \"4g\"}");
    budget_t domain = L("{}");
    budget_min(&kp, &project);
    budget_min(&kp, &domain);
    assert_json(&kp, "{\"cpu\":\"8\",\"cuda.device\":\"Infinity\",\"cuda.shares\":\"Infinity\","
                     "\"mem\":\"4294967296\"}");
}

static void test_cap_by_group_capacity(void **state)
{
    (void)state;
    budget_t kp = L("{\"cpu\": \"2\"}");
    slots_t group_free = S("cpu=6 mem=12g");
    budget_cap(&kp, &group_free, BUDGET_KNOWN_SLOTS);
    /* cuda.* absent from the group's agents: nothing there. */
    assert_json(&kp, "{\"cpu\":\"2\",\"cuda.device\":\"0\",\"cuda.shares\":\"0.00\","
                     "\"mem\":\"12884901888\"}");
}

static void test_sub_floor(void **state)
{
    (void)state;
    slots_t a = S("cpu=4 mem=8g");
    slots_t used = S("cpu=5 mem=1g cuda.device=1");
    slots_sub_floor(&a, &used);
    assert_int_equal(slots_get(&a, SLOT_CPU), 0);
    assert_int_equal(slots_get(&a, SLOT_MEM), 7LL << 30);
    assert_int_equal(slots_get(&a, SLOT_CUDA_DEVICE), 0);
}

static void test_preset_allocatable(void **state)
{
    (void)state;
    slots_t agents[2] = {S("cpu=2 mem=4g"), S("cpu=8 mem=16g cuda.device=1")};
    budget_t all = L("{}");
    slots_t small = S("cpu=1 mem=1g"), gpu = S("cpu=4 mem=16g cuda.device=1"),
            huge = S("cpu=16 mem=1g");
    assert_true(budget_preset_allocatable(&small, &all, agents, 2));
    assert_true(budget_preset_allocatable(&gpu, &all, agents, 2));
    /* Not split across agents. */
    assert_false(budget_preset_allocatable(&huge, &all, agents, 2));
    /* No agent at all. */
    assert_false(budget_preset_allocatable(&small, &all, agents, 0));
    /* The keypair's budget refuses what an agent could hold. */
    budget_t kp = L("{\"cuda.device\": 0}");
    assert_false(budget_preset_allocatable(&gpu, &kp, agents, 2));
    assert_true(budget_preset_allocatable(&small, &kp, agents, 2));
}

static void test_known_slots_json(void **state)
{
    (void)state;
    slots_t s = S("cpu=0.5");
    json_t *o = slots_to_json_known(&s, BUDGET_KNOWN_SLOTS);
    char *got = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(
        got, "{\"cpu\":\"0.5\",\"cuda.device\":\"0\",\"cuda.shares\":\"0.00\",\"mem\":\"0\"}");
    free(got);
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_limit_is_infinity),
        cmocka_unit_test(test_remaining_is_limit_minus_using),
        cmocka_unit_test(test_remaining_floors_at_zero),
        cmocka_unit_test(test_infinity_text_in_limit),
        cmocka_unit_test(test_malformed_limit),
        cmocka_unit_test(test_min_of_scopes),
        cmocka_unit_test(test_cap_by_group_capacity),
        cmocka_unit_test(test_sub_floor),
        cmocka_unit_test(test_preset_allocatable),
        cmocka_unit_test(test_known_slots_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
