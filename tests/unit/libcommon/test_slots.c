/* test_slots.c: libcommon/slots.c: exact parsing, formatting and arithmetic of
 * resource slot amounts, and the errors for bad input. */
#include "libcommon/slots.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

static int64_t parse_ok(int id, const char *text)
{
    int64_t v = -1;
    ts_err err = {{0}};
    if (!slot_parse(id, text, &v, &err)) fail_msg("%s '%s': %s", slot_name(id), text, err.msg);
    return v;
}

static void parse_bad(int id, const char *text, const char *want)
{
    int64_t v = 0;
    ts_err err = {{0}};
    if (slot_parse(id, text, &v, &err))
        fail_msg("%s '%s' accepted as %lld", slot_name(id), text, (long long)v);
    if (!strstr(err.msg, want))
        fail_msg("%s '%s': got '%s', want '%s'", slot_name(id), text, err.msg, want);
}

static void test_parse_cpu_and_devices(void **state)
{
    (void)state;
    assert_int_equal(parse_ok(SLOT_CPU, "2"), 2000);
    assert_int_equal(parse_ok(SLOT_CPU, "0.5"), 500);
    assert_int_equal(parse_ok(SLOT_CPU, " 1.250 "), 1250);
    assert_int_equal(parse_ok(SLOT_CPU, "0.001"), 1);
    assert_int_equal(parse_ok(SLOT_CPU, "0"), 0);
    assert_int_equal(parse_ok(SLOT_CPU, "1e1"), 10000);
    assert_int_equal(parse_ok(SLOT_CPU, ".5"), 500);
    assert_int_equal(parse_ok(SLOT_CUDA_DEVICE, "2"), 2);
    assert_int_equal(parse_ok(SLOT_CUDA_SHARES, "0.25"), 25);
    assert_int_equal(parse_ok(SLOT_CUDA_SHARES, "0.50"), 50);
    assert_int_equal(parse_ok(SLOT_CUDA_SHARES, "1"), 100);
    assert_int_equal(parse_ok(SLOT_CUDA_SHARES, "2.5"), 250);
    assert_int_equal(parse_ok(SLOT_CUDA_SHARES, "1e-2"), 1);
    assert_int_equal(parse_ok(SLOT_CUDA_SHARES, "0.1000000000000000000000"), 10);
}

static void test_parse_mem(void **state)
{
    (void)state;
    assert_int_equal(parse_ok(SLOT_MEM, "1g"), 1073741824LL);
    assert_int_equal(parse_ok(SLOT_MEM, "512m"), 512LL << 20);
    assert_int_equal(parse_ok(SLOT_MEM, "1.5g"), 3LL << 29);
    assert_int_equal(parse_ok(SLOT_MEM, "1GiB"), 1LL << 30);
    assert_int_equal(parse_ok(SLOT_MEM, "2Gb"), 2LL << 30);
    assert_int_equal(parse_ok(SLOT_MEM, "4k"), 4096);
    assert_int_equal(parse_ok(SLOT_MEM, "1024"), 1024);
    assert_int_equal(parse_ok(SLOT_MEM, "100b"), 100);
    assert_int_equal(parse_ok(SLOT_MEM, "7e"), 7LL << 60);
    assert_int_equal(parse_ok(SLOT_MEM, "0.5k"), 512);
}

static void test_parse_errors(void **state)
{
    (void)state;
    parse_bad(SLOT_CPU, "-1", "negative amount");
    parse_bad(SLOT_CUDA_SHARES, "-0.25", "negative amount");
    parse_bad(SLOT_CPU, "", "empty amount");
    parse_bad(SLOT_CPU, "   ", "empty amount");
    parse_bad(SLOT_CPU, "abc", "not an amount");
    parse_bad(SLOT_CPU, "1.2.3", "not an amount");
    parse_bad(SLOT_CPU, "1g", "only allowed for mem");
    parse_bad(SLOT_CUDA_SHARES, "0.005", "more decimals than the quantum 0.01");
    parse_bad(SLOT_CUDA_SHARES, "0.251", "more decimals than the quantum 0.01");
    parse_bad(SLOT_CPU, "0.0005", "more decimals than the quantum 0.001");
    parse_bad(SLOT_CUDA_DEVICE, "0.5", "must be a whole number");
    parse_bad(SLOT_MEM, "1.5", "not a whole number of bytes");
    parse_bad(SLOT_MEM, "5x", "unknown unit 'x'");
    parse_bad(SLOT_MEM, "5gg", "unknown unit");
    parse_bad(SLOT_MEM, "8e", "too large");
    parse_bad(SLOT_MEM, "9223372036854775808", "too large");
    parse_bad(SLOT_CPU, "9223372036854775807", "too large");
    parse_bad(SLOT_CPU, "1e300", "too large");
    parse_bad(SLOT_CUDA_SHARES, "1e-300", "more decimals");
    parse_bad(SLOT_CPU, "1234567890123456789012345678901234567890", "too many digits");
    assert_int_equal(parse_ok(SLOT_MEM, "9223372036854775807"), INT64_MAX);
}

static void test_slot_names(void **state)
{
    (void)state;
    ts_err err = {{0}};
    assert_int_equal(slot_find("cpu"), SLOT_CPU);
    assert_int_equal(slot_find("cuda.shares"), SLOT_CUDA_SHARES);
    assert_int_equal(slot_find("rocm.device"), -1);
    int rocm = -1, again = -1, tpu = -1, none = 0;
    assert_true(slot_intern("rocm.device", &rocm, &err));
    assert_true(rocm >= SLOT_BUILTIN_COUNT);
    assert_true(slot_intern("rocm.device", &again, &err));
    assert_int_equal(again, rocm);
    assert_string_equal(slot_name(rocm), "rocm.device");
    assert_int_equal(parse_ok(rocm, "3"), 3);
    assert_true(slot_intern("tpu.shares", &tpu, &err));
    assert_true(tpu >= 0);
    assert_int_equal(parse_ok(tpu, "0.5"), 50);
    assert_false(slot_intern("gpu", &none, &err));
    assert_int_equal(none, -1);
    assert_non_null(strstr(err.msg, "unknown slot 'gpu'"));
    assert_false(slot_intern("Bad.device", &none, &err));
    assert_false(slot_intern("x.memory", &none, &err));
    assert_string_equal(slot_name(99), "?");
}

static void test_format(void **state)
{
    (void)state;
    char b[SLOT_FMT_MAX];
    assert_string_equal(slot_format(SLOT_CPU, 500, b, sizeof(b)), "0.5");
    assert_string_equal(slot_format(SLOT_CPU, 2000, b, sizeof(b)), "2");
    assert_string_equal(slot_format(SLOT_CPU, 1250, b, sizeof(b)), "1.25");
    assert_string_equal(slot_format(SLOT_CPU, 1, b, sizeof(b)), "0.001");
    assert_string_equal(slot_format(SLOT_CUDA_SHARES, 50, b, sizeof(b)), "0.50");
    assert_string_equal(slot_format(SLOT_CUDA_SHARES, 100, b, sizeof(b)), "1.00");
    assert_string_equal(slot_format(SLOT_CUDA_SHARES, 7, b, sizeof(b)), "0.07");
    assert_string_equal(slot_format(SLOT_MEM, 1073741824, b, sizeof(b)), "1073741824");
    assert_string_equal(slot_format(SLOT_MEM, INT64_MAX, b, sizeof(b)), "9223372036854775807");
    assert_string_equal(slot_format(SLOT_CPU, -1500, b, sizeof(b)), "-1.5");
    /* every formatted amount parses back to itself */
    int64_t samples[] = {0, 1, 9, 10, 99, 100, 101, 12345, 1000000007};
    for (int id = 0; id < SLOT_BUILTIN_COUNT; id++)
        for (size_t i = 0; i < TS_ARRAY_LEN(samples); i++)
            assert_int_equal(parse_ok(id, slot_format(id, samples[i], b, sizeof(b))), samples[i]);
}

static void test_json(void **state)
{
    (void)state;
    ts_err err = {{0}};
    slots_t s;
    json_t *j = json_loads("{\"cpu\": 2, \"mem\": \"4g\", \"cuda.shares\": 0.5, \"cuda.device\": "
                           "\"1\", \"rocm.device\": 2}",
                           0, NULL);
    assert_true(slots_from_json(&s, j, &err));
    json_decref(j);
    assert_int_equal(slots_get(&s, SLOT_CPU), 2000);
    assert_int_equal(slots_get(&s, SLOT_MEM), 4LL << 30);
    assert_int_equal(slots_get(&s, SLOT_CUDA_SHARES), 50);
    assert_int_equal(slots_get(&s, SLOT_CUDA_DEVICE), 1);
    assert_int_equal(slots_get(&s, slot_find("rocm.device")), 2);

    json_t *out = slots_to_json(&s);
    char *txt = json_dumps(out, JSON_SORT_KEYS | JSON_COMPACT);
    assert_string_equal(txt, "{\"cpu\":\"2\",\"cuda.device\":\"1\",\"cuda.shares\":\"0.50\","
                             "\"mem\":\"4294967296\",\"rocm.device\":\"2\"}");
    slots_t back;
    assert_true(slots_from_json(&back, out, &err));
    assert_true(slots_equal(&s, &back));
    free(txt);
    json_decref(out);

    j = json_loads("{\"cpu\": 0.1, \"cuda.shares\": 0.07}", 0, NULL);
    assert_true(slots_from_json(&s, j, &err));
    assert_int_equal(slots_get(&s, SLOT_CPU), 100);
    assert_int_equal(slots_get(&s, SLOT_CUDA_SHARES), 7);
    json_decref(j);

    static const struct {
        const char *json, *want;
    } bad[] = {
        {"{\"cpu\": -1}", "negative"},
        {"{\"cpu\": true}", "must be a number or a string"},
        {"{\"cpu\": null}", "must be a number or a string"},
        {"{\"gpu\": 1}", "unknown slot 'gpu'"},
        {"{\"cuda.shares\": 0.333}", "more decimals"},
        {"{\"mem\": \"lots\"}", "not an amount"},
        {"[1]", "must be a JSON object"},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++) {
        j = json_loads(bad[i].json, JSON_DECODE_ANY, NULL);
        assert_non_null(j);
        bool ok = slots_from_json(&s, j, &err);
        json_decref(j);
        if (ok) fail_msg("%s accepted", bad[i].json);
        if (!strstr(err.msg, bad[i].want)) fail_msg("%s: got '%s'", bad[i].json, err.msg);
    }
}

static void test_text_and_arith(void **state)
{
    (void)state;
    ts_err err = {{0}};
    slots_t a, b, c;
    assert_true(slots_parse_text(&a, "cpu=2 mem=1g cuda.shares=0.5", &err));
    assert_true(slots_parse_text(&b, "cpu=1.5,mem=512m", &err));
    char buf[256];
    assert_string_equal(slots_format(&a, buf, sizeof(buf)),
                        "cpu=2 mem=1073741824 cuda.shares=0.50");
    c = a;
    assert_true(slots_add(&c, &b, &err));
    assert_int_equal(slots_get(&c, SLOT_CPU), 3500);
    assert_int_equal(slots_get(&c, SLOT_MEM), 1536LL << 20);
    assert_true(slots_sub(&c, &b, &err));
    assert_true(slots_equal(&c, &a));
    /* below zero: refused, unchanged */
    assert_false(slots_sub(&b, &a, &err));
    assert_non_null(strstr(err.msg, "cpu: cannot take 2 from 1.5"));
    assert_int_equal(slots_get(&b, SLOT_CPU), 1500);
    /* overflow: refused, unchanged */
    slots_t big;
    slots_clear(&big);
    slots_put(&big, SLOT_MEM, INT64_MAX);
    c = a;
    assert_false(slots_add(&c, &big, &err));
    assert_non_null(strstr(err.msg, "mem: sum overflows"));
    assert_true(slots_equal(&c, &a));

    /* fits / short / le */
    assert_true(slots_fits(&b, &a));
    assert_false(slots_fits(&a, &b));
    assert_int_equal(slots_short(&a, &b), SLOT_CPU);
    assert_true(slots_le(&b, &a));
    slots_t empty;
    slots_clear(&empty);
    assert_true(slots_fits(&empty, &b));
    assert_true(slots_is_zero(&empty));
    slots_put(&empty, SLOT_CPU, 0);
    assert_true(slots_is_zero(&empty));
    assert_true(slots_equal(&empty, &(slots_t){0}));

    /* dominant share */
    slots_t cap, use;
    assert_true(slots_parse_text(&cap, "cpu=100 mem=100g cuda.shares=10", &err));
    assert_true(slots_parse_text(&use, "cpu=10 mem=50g", &err));
    assert_true(slots_dominant_share(&use, &cap) > 0.49 && slots_dominant_share(&use, &cap) < 0.51);

    assert_false(slots_parse_text(&a, "cpu", &err));
    assert_non_null(strstr(err.msg, "expected <slot>=<amount>"));
    assert_false(slots_parse_text(&a, "cpu=1 gpu=1", &err));
    assert_non_null(strstr(err.msg, "unknown slot"));
    assert_false(slots_set(&a, "cpu", "x", &err));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_cpu_and_devices),
        cmocka_unit_test(test_parse_mem),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_slot_names),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_text_and_arith),
    };
    return cmocka_run_group_tests_name("slots", tests, NULL, NULL);
}
