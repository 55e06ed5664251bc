/* Unit tests: errors with context, UUIDs, logfmt lines, Prometheus rendering. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <time.h>

#include "libcommon/common.h"
#include "libcommon/log.h"
#include "libcommon/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_err_prefix_carries_context(void **state)
{
    (void)state;
    ts_err e = {{0}};
    ts_err_set(&e, "connection refused");
    ts_err_prefix(&e, "Redis %s", "redis://x:1");
    ts_err_prefix(&e, "start-up");
    assert_string_equal(e.msg, "start-up: Redis redis://x:1: connection refused");
    ts_err empty = {{0}};
    ts_err_prefix(&empty, "only context");
    assert_string_equal(empty.msg, "only context");
    ts_err_set(NULL, "ignored"); /* NULL is allowed */
    ts_err_prefix(NULL, "ignored");
}

static void test_err_truncates_safely(void **state)
{
    (void)state;
    ts_err e = {{0}};
    char big[2000];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    ts_err_set(&e, "%s", big);
    assert_int_equal(strlen(e.msg), sizeof(e.msg) - 1);
    ts_err_prefix(&e, "%s", big);
    assert_int_equal(strlen(e.msg), sizeof(e.msg) - 1);
}

/* Published FNV-1a 64 vectors; continuing from a state equals hashing the whole. */
static void test_fnv1a(void **state)
{
    (void)state;
    assert_true(ts_fnv1a(TS_FNV_OFFSET, "", 0) == 0xcbf29ce484222325ull);
    assert_true(ts_fnv1a(TS_FNV_OFFSET, "a", 1) == 0xaf63dc4c8601ec8cull);
    assert_true(ts_fnv1a(TS_FNV_OFFSET, "foobar", 6) == 0x85944171f73967e8ull);
    assert_true(ts_fnv1a(ts_fnv1a(TS_FNV_OFFSET, "foo", 3), "bar", 3) == 0x85944171f73967e8ull);
}

static void test_uuid4_shape_and_uniqueness(void **state)
{
    (void)state;
    char a[TS_UUID_STRLEN], b[TS_UUID_STRLEN];
    ts_uuid4(a);
    ts_uuid4(b);
    assert_true(ts_uuid_valid(a));
    assert_true(ts_uuid_valid(b));
    assert_string_not_equal(a, b);
    assert_int_equal(a[14], '4');           /* version */
    assert_non_null(strchr("89ab", a[19])); /* variant */
    assert_false(ts_uuid_valid("not-a-uuid"));
    assert_false(ts_uuid_valid(NULL));
    assert_false(ts_uuid_valid("0123456789012345678901234567890123456"));
    assert_false(ts_uuid_valid("zzzzzzzz-zzzz-4zzz-8zzz-zzzzzzzzzzzz"));
}

static void test_uuid7_shape_and_order(void **state)
{
    (void)state;
    char prev[TS_UUID_STRLEN], cur[TS_UUID_STRLEN];
    int64_t before = ts_now_wall_ms();
    ts_uuid7(prev);
    assert_true(ts_uuid_valid(prev));
    assert_int_equal(prev[14], '7');           /* version */
    assert_non_null(strchr("89ab", prev[19])); /* variant */
    /* the first 48 bits are the Unix time in ms */
    char hex[13];
    memcpy(hex, prev, 8);
    memcpy(hex + 8, prev + 9, 4);
    hex[12] = '\0';
    int64_t ms = (int64_t)strtoll(hex, NULL, 16);
    assert_true(ms >= before && ms <= ts_now_wall_ms());
    /* later ids sort after earlier ones (compared as text, as an index does) */
    for (int i = 0; i < 20; i++) {
        struct timespec ts = {0, 1100000};
        nanosleep(&ts, NULL);
        ts_uuid7(cur);
        assert_true(strcmp(cur, prev) > 0);
        memcpy(prev, cur, sizeof(prev));
    }
}

static void test_uuid4_differs_across_fork(void **state)
{
    (void)state;
    char parent[TS_UUID_STRLEN], child[TS_UUID_STRLEN] = "";
    ts_uuid4(parent); /* fills this thread's pool */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char id[TS_UUID_STRLEN];
        ts_uuid4(id);
        ssize_t w = write(fds[1], id, sizeof(id));
        _exit(w == (ssize_t)sizeof(id) ? 0 : 1);
    }
    assert_int_equal(read(fds[0], child, sizeof(child)), (ssize_t)sizeof(child));
    int st;
    waitpid(pid, &st, 0);
    ts_uuid4(parent); /* the parent's next id */
    assert_true(ts_uuid_valid(child));
    assert_string_not_equal(parent, child);
    close(fds[0]);
    close(fds[1]);
}

static char *capture_log(void (*fn)(void))
{
    FILE *f = tmpfile();
    assert_non_null(f);
    tlog_set_stream((struct _IO_FILE *)f);
    fn();
    tlog_set_stream(NULL);
    long len = ftell(f);
    rewind(f);
    char *buf = calloc(1, (size_t)len + 1);
    assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    return buf;
}

static void log_with_context(void)
{
    tlog_init("gateway", "node-1");
    tlog_min_level = TLOG_LEVEL_INFO;
    tlog_ctx_request("req-1");
    tlog_ctx_session("sess-9");
    tlog_ctx_entity("folder", "my data");
    tlog_ctx_user("u-1");
    tlog_ctx_access_key("AKTEST");
    TLOG_INFO("created \"it\"\nnow", "kind=%s n=%d", "batch", 3);
    TLOG_DEBUG("hidden", "x=%d", 1);
    tlog_ctx_clear();
    TLOG_WARN("plain", "");
}

static void test_log_logfmt_line(void **state)
{
    (void)state;
    char *out = capture_log(log_with_context);
    char *second = strchr(out, '\n');
    assert_non_null(second);
    *second++ = '\0';
    /* one record per line: the newline inside msg is escaped */
    assert_non_null(strstr(out, "level=info service=gateway instance=node-1"));
    assert_non_null(strstr(out, "msg=\"created \\\"it\\\"\\nnow\" kind=batch n=3"));
    assert_non_null(strstr(out, "request_id=req-1 session=sess-9"));
    assert_non_null(strstr(out, "folder=\"my data\" user=\"u-1\" access_key=\"AKTEST\""));
    assert_int_equal(strncmp(out, "ts=", 3), 0);
    assert_null(strstr(second, "hidden"));
    assert_non_null(strstr(second, "level=warn"));
    assert_null(strstr(second, "request_id")); /* context cleared */
    assert_null(strstr(second, "folder="));
    assert_null(strstr(second, "access_key="));
    free(out);
}

static void log_bad_entity_key(void)
{
    tlog_init("vfolder", NULL);
    tlog_min_level = TLOG_LEVEL_INFO;
    tlog_ctx_entity("bad key=x", "v");
    TLOG_INFO("one", "");
    tlog_ctx_entity("folder", "f1");
    tlog_ctx_entity("domain", NULL); /* clears the entity */
    TLOG_INFO("two", "");
    tlog_ctx_clear();
}

/* An entity key that is not lower case letters is not printed: it could forge
 * another field of the line. */
static void test_log_entity_key_checked(void **state)
{
    (void)state;
    char *out = capture_log(log_bad_entity_key);
    assert_null(strstr(out, "bad key"));
    assert_null(strstr(out, "f1"));
    assert_null(strstr(out, "domain="));
    free(out);
}

static void test_log_levels(void **state)
{
    (void)state;
    assert_true(tlog_set_level("debug"));
    assert_int_equal(tlog_min_level, TLOG_LEVEL_DEBUG);
    assert_true(tlog_set_level("error"));
    assert_false(tlog_set_level("loud"));
    assert_false(tlog_set_level(NULL));
    assert_int_equal(tlog_min_level, TLOG_LEVEL_ERROR);
    tlog_min_level = TLOG_LEVEL_INFO;
}

static void test_log_quote(void **state)
{
    (void)state;
    char buf[16];
    assert_string_equal(tlog_quote(buf, sizeof(buf), "a b"), "\"a b\"");
    assert_string_equal(tlog_quote(buf, sizeof(buf), NULL), "\"\"");
    tlog_quote(buf, sizeof(buf), "a very long value that does not fit");
    assert_true(strlen(buf) < sizeof(buf));
    assert_int_equal(buf[strlen(buf) - 1], '"');
}

static void collect_two(FILE *out, void *ctx)
{
    int *n = ctx;
    metrics_family(out, "t_requests_total", "counter", "Requests.\nSecond line \\ here");
    metrics_sample_u64(out, "t_requests_total", "code=\"2xx\"", (uint64_t)*n);
    metrics_sample(out, "t_requests_total", "code=\"5xx\"", 0.5);
    metrics_family(out, "t_up", "gauge", "Up.");
    metrics_sample(out, "t_up", NULL, 1);
}

static void test_metrics_render(void **state)
{
    (void)state;
    metrics *m = metrics_new();
    int n = 42;
    metrics_add(m, collect_two, &n);
    size_t len;
    char *text = metrics_render(m, &len);
    assert_int_equal(strlen(text), len);
    assert_string_equal(text, "# HELP t_requests_total Requests.\\nSecond line \\\\ here\n"
                              "# TYPE t_requests_total counter\n"
                              "t_requests_total{code=\"2xx\"} 42\n"
                              "t_requests_total{code=\"5xx\"} 0.5\n"
                              "# HELP t_up Up.\n"
                              "# TYPE t_up gauge\n"
                              "t_up 1\n");
    free(text);
    metrics_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_err_prefix_carries_context),
        cmocka_unit_test(test_err_truncates_safely),
        cmocka_unit_test(test_fnv1a),
        cmocka_unit_test(test_uuid4_shape_and_uniqueness),
        cmocka_unit_test(test_uuid4_differs_across_fork),
        cmocka_unit_test(test_uuid7_shape_and_order),
        cmocka_unit_test(test_log_logfmt_line),
        cmocka_unit_test(test_log_entity_key_checked),
        cmocka_unit_test(test_log_levels),
        cmocka_unit_test(test_log_quote),
        cmocka_unit_test(test_metrics_render),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
