/* test_logs_ports.c: the runtime's parts that need no runc: the kernel log
 * writer's rotation and tail (logs.c), the host port pool across a restart
 * (ports.c), and running a program with input, output, a timeout and a
 * background child (libcommon/proc.c, which the runtime runs everything
 * with). */
#include "services/agent/logs.h"
#include "services/agent/ports.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "libcommon/proc.h"
#include "tests/unit/agent/shell_util.h"

static void test_log_writer_rotation(void **state)
{
    (void)state;
    char dir[] = "/tmp/tessera-logw-XXXXXX";
    assert_non_null(mkdtemp(dir));
    log_writer w;
    assert_true(logw_open(&w, dir, 100));
    for (int i = 0; i < 30; i++)
        logw_write(&w, "0123456789", 10);
    logw_write(&w, "tail", 4);
    logw_close(&w);
    size_t len;
    ts_err err = {{0}};
    char *t = logs_tail(dir, 1000, &len, &err);
    assert_non_null(t);
    assert_true(len <= 100);
    assert_true(len >= 50);
    assert_true(len >= 4 && memcmp(t + len - 4, "tail", 4) == 0);
    free(t);
    /* a chunk larger than a segment keeps its tail */
    assert_true(logw_open(&w, dir, 100));
    char big[500];
    memset(big, 'x', sizeof(big));
    memcpy(big + sizeof(big) - 3, "end", 3);
    logw_write(&w, big, sizeof(big));
    logw_close(&w);
    t = logs_tail(dir, 1000, &len, &err);
    assert_true(len <= 100);
    assert_true(memcmp(t + len - 3, "end", 3) == 0);
    free(t);
    sh("rm -rf %s", dir);
}

static void test_port_pool_persists(void **state)
{
    (void)state;
    char dir[] = "/tmp/tessera-ports-XXXXXX";
    assert_non_null(mkdtemp(dir));
    ts_err err = {{0}};
    port_pool *p = ports_new(dir, 31200, 31203, &err);
    assert_non_null(p);
    int a[2], b[2];
    assert_true(ports_alloc(p, "k1", 2, a, &err));
    ports_free(p);
    /* "restart": a new pool over the same state dir does not hand them out */
    p = ports_new(dir, 31200, 31203, &err);
    if (!ports_alloc(p, "k2", 2, b, &err)) fail_msg("%s", err.msg);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            assert_int_not_equal(a[i], b[j]);
    int c;
    assert_false(ports_alloc(p, "k3", 1, &c, &err));
    assert_non_null(strstr(err.msg, "exhausted"));
    char owner[64];
    assert_true(ports_owner(p, a[0], owner, sizeof(owner)));
    assert_string_equal(owner, "k1");
    assert_int_equal(ports_release_kernel(p, "k1"), 2);
    assert_int_equal(ports_release_kernel(p, "k1"), 0);
    assert_true(ports_alloc(p, "k3", 1, &c, &err));
    ports_free(p);
    sh("rm -rf %s", dir);
}

static void test_proc_run(void **state)
{
    (void)state;
    const char *argv[] = {"/bin/sh", "-c", "cat; echo e >&2; exit 4", NULL};
    proc_opts o = {.argv = argv, .stdin_data = "input", .stdin_len = 5, .timeout_ms = 5000};
    exec_result r;
    ts_err err = {{0}};
    assert_true(proc_run(&o, &r, &err));
    assert_int_equal(r.exit_code, 4);
    assert_string_equal(r.out, "input");
    assert_string_equal(r.err, "e\n");
    exec_result_free(&r);
    const char *bg[] = {"/bin/sh", "-c", "sleep 30 & echo started", NULL};
    proc_opts o2 = {.argv = bg, .timeout_ms = 10000};
    int64_t t0 = ts_now_mono_ms();
    assert_true(proc_run(&o2, &r, &err));
    /* a background child holding stdout does not keep us waiting */
    assert_true(ts_now_mono_ms() - t0 < 2000);
    assert_string_equal(r.out, "started\n");
    exec_result_free(&r);
    const char *none[] = {"/no/such/bin", NULL};
    proc_opts o3 = {.argv = none};
    assert_false(proc_run(&o3, &r, &err));
    assert_non_null(strstr(err.msg, "cannot run /no/such/bin"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_writer_rotation),
        cmocka_unit_test(test_port_pool_persists),
        cmocka_unit_test(test_proc_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
