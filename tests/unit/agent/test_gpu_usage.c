/* test_gpu_usage.c: the agent reads a kernel's GPU memory from the cuda-shim's
 * shared accounting region (services/agent/gpu_usage.h): in use and the
 * high-water mark per device, only the kernel's devices, its GPU time (version
 * 2, only when counted; none from a version 1 file, whose memory still reads),
 * and a file that is not a region (missing, short, another magic or version,
 * a header that does not match its size) is refused. The
 * region is written here with the layout the shim uses
 * (libcommon/cuda_region.h). */
#include "services/agent/gpu_usage.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcommon/cuda_region.h"

static char dir[] = "/tmp/test_gpu_usage.XXXXXX";

static char *_write(const cuda_region *r, size_t len)
{
    char *path = gpu_usage_region_path(dir, "k1");
    char *sub = ts_asprintf("%s/k1", dir);
    char *shared = ts_asprintf("%s/k1/shared", dir);
    mkdir(sub, 0755);
    mkdir(shared, 0755);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(r, 1, len, f), len);
    fclose(f);
    free(sub);
    free(shared);
    return path;
}

static void test_reads_used_and_peak(void **state)
{
    (void)state;
    cuda_region *r = calloc(1, sizeof(*r));
    r->magic = CUDA_REGION_MAGIC;
    r->version = CUDA_REGION_VERSION;
    r->size = sizeof(*r);
    r->used[0] = 3ULL << 30;
    r->peak[0] = 5ULL << 30;
    r->used[1] = 1 << 20;
    r->peak[1] = 0;   /* a peak below what is in use reads as what is in use */
    r->used[2] = 999; /* not the kernel's */
    char *path = _write(r, sizeof(*r));
    gpu_usage g;
    ts_err err;
    assert_true(gpu_usage_read(path, 2, &g, &err));
    assert_int_equal(g.n_devices, 2);
    assert_int_equal(g.mem_bytes[0], 3LL << 30);
    assert_int_equal(g.mem_peak_bytes[0], 5LL << 30);
    assert_int_equal(g.mem_bytes[1], 1 << 20);
    assert_int_equal(g.mem_peak_bytes[1], 1 << 20);
    assert_int_equal(g.mem_bytes[2], 0);
    assert_non_null(strstr(path, "/k1/shared/tessera-cuda.region"));

    /* another version, another magic, a short file: not a region */
    r->version = CUDA_REGION_VERSION + 1;
    free(_write(r, sizeof(*r)));
    assert_false(gpu_usage_read(path, 2, &g, &err));
    r->version = CUDA_REGION_VERSION;
    r->magic = 0;
    free(_write(r, sizeof(*r)));
    assert_false(gpu_usage_read(path, 2, &g, &err));
    r->magic = CUDA_REGION_MAGIC;
    free(_write(r, 4096));
    assert_false(gpu_usage_read(path, 2, &g, &err));
    assert_non_null(strstr(err.msg, "not a GPU accounting region"));
    unlink(path);
    assert_false(gpu_usage_read(path, 2, &g, &err));
    free(path);
    free(r);
}

static void test_gpu_time_v2_and_v1(void **state)
{
    (void)state;
    cuda_region *r = calloc(1, sizeof(*r));
    r->magic = CUDA_REGION_MAGIC;
    r->version = CUDA_REGION_VERSION;
    r->size = sizeof(*r);
    r->used[0] = 1 << 20;
    r->busy_counted = 1;
    r->busy_ns[0] = 7500000000LL;
    r->busy_ns[1] = -5; /* a correction ahead of its estimate: never below zero */
    r->busy_ns[2] = 123;
    char *path = _write(r, sizeof(*r));
    gpu_usage g;
    ts_err err;
    assert_true(gpu_usage_read(path, 2, &g, &err));
    assert_true(g.busy_counted);
    assert_int_equal(g.busy_ns[0], 7500000000LL);
    assert_int_equal(g.busy_ns[1], 0);
    assert_int_equal(g.busy_ns[2], 0); /* not the kernel's */

    /* no share (the limiter is off): no GPU time, whatever the counters hold */
    r->busy_counted = 0;
    free(_write(r, sizeof(*r)));
    assert_true(gpu_usage_read(path, 2, &g, &err));
    assert_false(g.busy_counted);
    assert_int_equal(g.busy_ns[0], 0);
    assert_int_equal(g.mem_bytes[0], 1 << 20);

    /* version 1 (a container started before the upgrade): memory, no GPU time */
    r->busy_counted = 1;
    r->version = 1;
    r->size = CUDA_REGION_V1_SIZE;
    free(_write(r, CUDA_REGION_V1_SIZE));
    assert_true(gpu_usage_read(path, 2, &g, &err));
    assert_int_equal(g.n_devices, 2);
    assert_int_equal(g.mem_bytes[0], 1 << 20);
    assert_false(g.busy_counted);
    assert_int_equal(g.busy_ns[0], 0);

    /* headers that do not match the file: refused */
    r->size = sizeof(*r); /* version 1 claiming version 2's size */
    free(_write(r, sizeof(*r)));
    assert_false(gpu_usage_read(path, 2, &g, &err));
    r->version = CUDA_REGION_VERSION; /* version 2 in a version 1 file */
    free(_write(r, CUDA_REGION_V1_SIZE));
    assert_false(gpu_usage_read(path, 2, &g, &err));
    r->size = CUDA_REGION_V1_SIZE; /* version 2 with version 1's size */
    free(_write(r, sizeof(*r)));
    assert_false(gpu_usage_read(path, 2, &g, &err));
    r->version = 1; /* version 1 one byte short */
    free(_write(r, CUDA_REGION_V1_SIZE - 1));
    assert_false(gpu_usage_read(path, 2, &g, &err));
    unlink(path);
    free(path);
    free(r);
}

int main(void)
{
    assert_non_null(mkdtemp(dir));
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_reads_used_and_peak),
                                       cmocka_unit_test(test_gpu_time_v2_and_v1)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char *cmd = ts_asprintf("rm -rf %s", dir);
    if (system(cmd) != 0) rc = 1;
    free(cmd);
    return rc;
}
