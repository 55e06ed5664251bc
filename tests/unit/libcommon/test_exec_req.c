/* test_exec_req.c: libcommon/exec_req.c, the execute body's checks. */
#include "libcommon/exec_req.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* The status exec_req_parse gives text (0: accepted); err.msg kept in msg. */
static int check(const char *text, char *msg, size_t msg_size)
{
    json_error_t je;
    json_t *body = json_loads(text, JSON_ALLOW_NUL, &je);
    if (!body) fail_msg("bad test JSON %s: %s", text, je.text);
    exec_req er;
    int status = -1;
    ts_err err = {{0}};
    bool ok = exec_req_parse(body, &er, &status, &err);
    if (msg) ts_strlcpy(msg, err.msg, msg_size);
    json_decref(body);
    return ok ? 0 : status;
}

static void test_accepted(void **state)
{
    (void)state;
    json_t *body =
        json_pack("{s:s, s:s, s:s, s:{s:s}, s:i, s:s}", "mode", "batch", "code", "", "runId", "r1",
                  "options", "exec", "echo hi", "timeout_ms", 500, "other", "ignored");
    exec_req er;
    int status = 0;
    ts_err err = {{0}};
    assert_true(exec_req_parse(body, &er, &status, &err));
    assert_string_equal(er.mode, "batch");
    assert_string_equal(er.exec, "echo hi");
    assert_string_equal(er.run_id, "r1");
    assert_int_equal(er.timeout_ms, 500);
    json_decref(body);

    assert_int_equal(check("{\"mode\": \"query\", \"code\": \"ls\", \"options\": null}", NULL, 0),
                     0);
    assert_int_equal(check("{\"mode\": \"query\", \"run_id\": \"x\"}", NULL, 0), 0);
}

static void test_refused(void **state)
{
    (void)state;
    char msg[256];
    /* no mode: refused, not run as an empty query (which answered 200) */
    assert_int_equal(check("{}", msg, sizeof(msg)), 400);
    assert_non_null(strstr(msg, "\"mode\" is required"));
    assert_int_equal(check("{\"code\": \"echo hi\"}", msg, sizeof(msg)), 400);
    assert_non_null(strstr(msg, "\"mode\""));
    assert_int_equal(check("{\"mode\": null, \"code\": \"ls\"}", msg, sizeof(msg)), 400);
    assert_non_null(strstr(msg, "\"mode\""));
    assert_int_equal(check("{\"mode\": [\"query\"]}", msg, sizeof(msg)), 400);
    assert_non_null(strstr(msg, "\"mode\""));
    assert_int_equal(check("{\"mode\": \"\"}", NULL, 0), 400);
    assert_int_equal(check("{\"mode\": \"q\\u0000\"}", NULL, 0), 400);
    assert_int_equal(check("{\"mode\": 12345}", msg, sizeof(msg)), 400);
    assert_non_null(strstr(msg, "\"mode\""));
    assert_int_equal(check("{\"mode\": \"continue\"}", msg, sizeof(msg)), 400);
    assert_non_null(strstr(msg, "query"));
    assert_int_equal(check("{\"mode\": \"QUERY\"}", NULL, 0), 400);
    assert_int_equal(check("{\"mode\": \"a very long mode name indeed\"}", NULL, 0), 400);
    assert_int_equal(check("{\"mode\": \"query\", \"code\": 7}", msg, sizeof(msg)), 400);
    assert_non_null(strstr(msg, "\"code\""));
    assert_int_equal(check("{\"mode\": \"query\", \"code\": [\"ls\"]}", NULL, 0), 400);
    assert_int_equal(check("{\"mode\": \"query\", \"code\": \"a\\u0000b\"}", NULL, 0), 400);
    assert_int_equal(check("{\"mode\": \"query\", \"runId\": 5}", msg, sizeof(msg)), 400);
    assert_non_null(strstr(msg, "\"runId\""));
    assert_int_equal(check("{\"mode\": \"query\", \"options\": \"exec\"}", msg, sizeof(msg)), 400);
    assert_non_null(strstr(msg, "\"options\""));
    assert_int_equal(
        check("{\"mode\": \"query\", \"options\": {\"exec\": true}}", msg, sizeof(msg)), 400);
    assert_non_null(strstr(msg, "options.exec"));
    assert_int_equal(check("{\"mode\": \"query\", \"options\": {\"build\": 1}}", NULL, 0), 400);
    assert_int_equal(check("{\"mode\": \"query\", \"timeout_ms\": \"10\"}", msg, sizeof(msg)), 400);
    assert_non_null(strstr(msg, "timeout_ms"));
    assert_int_equal(check("{\"mode\": \"query\", \"timeout_ms\": -1}", NULL, 0), 400);
    assert_int_equal(check("{\"mode\": \"query\", \"timeout_ms\": 1.5}", NULL, 0), 400);
    assert_int_equal(check("{\"mode\": \"batch\"}", NULL, 0), 400);
    json_t *arr = json_array();
    exec_req er;
    int status = 0;
    ts_err err = {{0}};
    assert_false(exec_req_parse(arr, &er, &status, &err));
    assert_int_equal(status, 400);
    json_decref(arr);
}

static void test_sizes(void **state)
{
    (void)state;
    char *code = malloc(EXEC_REQ_CODE_MAX + 2);
    memset(code, 'x', EXEC_REQ_CODE_MAX + 1);
    code[EXEC_REQ_CODE_MAX] = '\0';
    exec_req er;
    int status = 0;
    ts_err err = {{0}};
    json_t *body = json_pack("{s:s, s:s}", "mode", "query", "code", code);
    assert_true(exec_req_parse(body, &er, &status, &err)); /* exactly the limit */
    json_decref(body);
    code[EXEC_REQ_CODE_MAX] = 'x';
    code[EXEC_REQ_CODE_MAX + 1] = '\0';
    body = json_pack("{s:s, s:s}", "mode", "query", "code", code);
    assert_false(exec_req_parse(body, &er, &status, &err));
    assert_int_equal(status, 413);
    assert_non_null(strstr(err.msg, "\"code\""));
    json_decref(body);
    body = json_pack("{s:s, s:{s:s}}", "mode", "batch", "options", "exec", code);
    assert_false(exec_req_parse(body, &er, &status, &err));
    assert_int_equal(status, 413);
    assert_non_null(strstr(err.msg, "options.exec"));
    json_decref(body);
    free(code);
    char rid[EXEC_REQ_RUN_ID_MAX + 2];
    memset(rid, 'r', sizeof(rid) - 1);
    rid[sizeof(rid) - 1] = '\0';
    body = json_pack("{s:s, s:s}", "mode", "query", "runId", rid);
    assert_false(exec_req_parse(body, &er, &status, &err));
    assert_int_equal(status, 400);
    json_decref(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepted),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
