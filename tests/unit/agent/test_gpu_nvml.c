/* test_gpu_nvml.c: the agent's GPU utilisation from NVML (services/agent/
 * gpu_nvml.h), against the fake libnvidia-ml.so.1 the shim tests build
 * (tests/shim/fake_nvml.c; FAKE_NVML_PROC_UTIL="pid:sm@ts,..." are its
 * per-process samples), dlopen'd through the path agent.nvml_library would
 * hold: the kernel's pids' smUtil summed per timestamp (capped at 100) and
 * averaged, other pids ignored, no new sample (NOT_FOUND) 0 and measured, an
 * NVML error or an unknown device not measured; no library, a bad path, a file
 * that is not a library, one without the functions or a failing nvmlInit_v2:
 * no NVML (NULL) and nothing measured. The fake is looked up next to this
 * test's build ($(BUILD)/shim/tests/fake/); without CUDA headers it is not
 * built and the tests that need it are skipped. */
#include "services/agent/gpu_nvml.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define UUID0 "GPU-00ababab-abab-abab-abab-abababababab" /* the fake's CUDA device 0 */

static char fake[PATH_MAX];

static gpu_nvml *_open_fake(void)
{
    if (access(fake, R_OK) != 0) {
        print_message("no fake NVML at %s (no CUDA headers?): skipped\n", fake);
        skip();
    }
    gpu_nvml *n = gpu_nvml_open(fake);
    assert_non_null(n);
    return n;
}

static void _reset_env(void)
{
    unsetenv("FAKE_NVML_PROC_UTIL");
    unsetenv("FAKE_NVML_PROC_UTIL_ERR");
    unsetenv("FAKE_NVML_INIT_ERR");
    setenv("FAKECU_DEVICES", "2", 1);
}

static void test_kernel_pids_averaged(void **state)
{
    (void)state;
    _reset_env();
    gpu_nvml *n = _open_fake();
    /* ts 10: 30 + 50 = 80; ts 20: 40 (999 is another kernel's) -> 60 */
    setenv("FAKE_NVML_PROC_UTIL", "100:30@10,200:50@10,100:40@20,999:90@20,999:90@30", 1);
    int pids[] = {100, 200};
    uint64_t seen = 0;
    double pct = -1;
    assert_true(gpu_nvml_util(n, UUID0, pids, 2, &seen, &pct));
    assert_true(pct > 59.999 && pct < 60.001);
    assert_int_equal(seen, 30); /* the newest sample, whoever's */
    /* the next look sees only what is newer */
    setenv("FAKE_NVML_PROC_UTIL", "100:30@10,100:20@40,200:10@40,100:70@50", 1);
    assert_true(gpu_nvml_util(n, UUID0, pids, 2, &seen, &pct));
    assert_true(pct > 49.999 && pct < 50.001); /* (30 + 70) / 2 */
    assert_int_equal(seen, 50);
    /* a sum over 100 (several processes, one device) is 100 */
    setenv("FAKE_NVML_PROC_UTIL", "100:70@60,200:60@60", 1);
    assert_true(gpu_nvml_util(n, UUID0, pids, 2, &seen, &pct));
    assert_true(pct > 99.999 && pct < 100.001);
    /* samples out of order: grouped by timestamp all the same (70: 40, 80: 20) */
    setenv("FAKE_NVML_PROC_UTIL", "200:10@70,100:20@80,999:5@70,100:30@70", 1);
    assert_true(gpu_nvml_util(n, UUID0, pids, 2, &seen, &pct));
    assert_true(pct > 29.999 && pct < 30.001);
    assert_int_equal(seen, 80);
    gpu_nvml_close(n);
}

static void test_other_pids_ignored(void **state)
{
    (void)state;
    _reset_env();
    gpu_nvml *n = _open_fake();
    setenv("FAKE_NVML_PROC_UTIL", "999:90@10,998:80@11", 1);
    int pids[] = {100};
    uint64_t seen = 0;
    double pct = -1;
    assert_true(gpu_nvml_util(n, UUID0, pids, 1, &seen, &pct));
    assert_true(pct == 0);
    assert_int_equal(seen, 11);
    /* no pids at all (the cgroup is empty): 0 too */
    pct = -1;
    seen = 0;
    assert_true(gpu_nvml_util(n, UUID0, NULL, 0, &seen, &pct));
    assert_true(pct == 0);
    gpu_nvml_close(n);
}

static void test_not_found_is_zero_measured(void **state)
{
    (void)state;
    _reset_env();
    gpu_nvml *n = _open_fake();
    setenv("FAKE_NVML_PROC_UTIL", "100:90@10", 1);
    int pids[] = {100};
    uint64_t seen = 10; /* seen already: NVML answers NOT_FOUND */
    double pct = -1;
    assert_true(gpu_nvml_util(n, UUID0, pids, 1, &seen, &pct));
    assert_true(pct == 0);
    assert_int_equal(seen, 10);
    unsetenv("FAKE_NVML_PROC_UTIL"); /* no sample ever */
    pct = -1;
    assert_true(gpu_nvml_util(n, UUID0, pids, 1, &seen, &pct));
    assert_true(pct == 0);
    gpu_nvml_close(n);
}

static void test_errors_not_measured(void **state)
{
    (void)state;
    _reset_env();
    gpu_nvml *n = _open_fake();
    setenv("FAKE_NVML_PROC_UTIL", "100:90@10", 1);
    int pids[] = {100};
    uint64_t seen = 0;
    double pct = -1;
    setenv("FAKE_NVML_PROC_UTIL_ERR", "3", 1); /* NVML_ERROR_NOT_SUPPORTED */
    assert_false(gpu_nvml_util(n, UUID0, pids, 1, &seen, &pct));
    assert_true(pct == -1);
    assert_int_equal(seen, 0);
    unsetenv("FAKE_NVML_PROC_UTIL_ERR");
    /* a device NVML does not know, or none */
    assert_false(
        gpu_nvml_util(n, "GPU-ffffffff-0000-0000-0000-000000000000", pids, 1, &seen, &pct));
    assert_false(gpu_nvml_util(n, "", pids, 1, &seen, &pct));
    assert_false(gpu_nvml_util(n, NULL, pids, 1, &seen, &pct));
    assert_true(pct == -1);
    /* the same samples read fine once the error is gone */
    assert_true(gpu_nvml_util(n, UUID0, pids, 1, &seen, &pct));
    assert_true(pct > 89.999 && pct < 90.001);
    gpu_nvml_close(n);
}

static void test_no_library_not_measured(void **state)
{
    (void)state;
    _reset_env();
    assert_null(gpu_nvml_open(NULL));
    assert_null(gpu_nvml_open(""));
    int pids[] = {100};
    uint64_t seen = 0;
    double pct = -1;
    assert_false(gpu_nvml_util(NULL, UUID0, pids, 1, &seen, &pct));
    assert_true(pct == -1);
    gpu_nvml_close(NULL);
}

static void test_bad_library_not_measured(void **state)
{
    (void)state;
    _reset_env();
    assert_null(gpu_nvml_open("/nonexistent/libnvidia-ml.so.1"));
    assert_null(gpu_nvml_open("libtessera-no-such-nvml.so.1"));
    /* a file that is not a library */
    char path[] = "/tmp/test_gpu_nvml.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "not an ELF\n", 11), 11);
    close(fd);
    assert_null(gpu_nvml_open(path));
    unlink(path);
    /* a library without NVML's functions */
    assert_null(gpu_nvml_open("libm.so.6"));
    /* the fake, but its nvmlInit_v2 fails */
    if (access(fake, R_OK) == 0) {
        setenv("FAKE_NVML_INIT_ERR", "9", 1); /* NVML_ERROR_DRIVER_NOT_LOADED */
        assert_null(gpu_nvml_open(fake));
        unsetenv("FAKE_NVML_INIT_ERR");
    }
}

int main(void)
{
    /* <build>/tests/agent/test_gpu_nvml -> <build>/shim/tests/fake/libnvidia-ml.so.1 */
    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (len <= 0) return 1;
    self[len] = '\0';
    snprintf(fake, sizeof(fake), "%s/../../shim/tests/fake/libnvidia-ml.so.1", dirname(self));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernel_pids_averaged),
        cmocka_unit_test(test_other_pids_ignored),
        cmocka_unit_test(test_not_found_is_zero_measured),
        cmocka_unit_test(test_errors_not_measured),
        cmocka_unit_test(test_no_library_not_measured),
        cmocka_unit_test(test_bad_library_not_measured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
