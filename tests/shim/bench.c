/* bench.c: cost of hooked calls against the fake driver (make bench-shim).
 *   bench <launch|alloc|free> N   run one loop once (for callgrind --toggle-collect)
 *   bench wall N                  median wall-clock ns per call of each loop
 * Kernels have duration 0 in the fake, so the limiter charges nothing and the
 * figures are the shim's own overhead. */
#include "services/cuda-shim/hooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Allocations are made and freed in batches of 1024, so the number of live
 * allocations stays where real programs keep it (a caching allocator holds a few
 * hundred), not in the hundreds of thousands. */
#define BATCH 1024
static CUdeviceptr _ptrs[BATCH];

__attribute__((noinline)) void bench_launch(int n);
__attribute__((noinline)) void bench_alloc(int n);
__attribute__((noinline)) void bench_free(int n);

__attribute__((noinline)) void bench_launch(int n)
{
    for (int i = 0; i < n; i++)
        cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
}
__attribute__((noinline)) void bench_alloc(int n)
{
    for (int i = 0; i < n; i++)
        cuMemAlloc_v2(&_ptrs[i], 256);
}
__attribute__((noinline)) void bench_free(int n)
{
    for (int i = 0; i < n; i++)
        cuMemFree_v2(_ptrs[i]);
}

static double _ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int _cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 3) return 2;
    int n = atoi(argv[2]);
    cuInit(0);
    /* warm up: the shim's one-time start-up is not what we measure */
    CUdeviceptr p;
    cuMemAlloc_v2(&p, 256);
    cuMemFree_v2(p);
    bench_launch(16);
    if (!strcmp(argv[1], "launch"))
        bench_launch(n);
    else if (!strcmp(argv[1], "alloc") || !strcmp(argv[1], "free")) {
        for (int done = 0; done < n; done += BATCH) {
            bench_alloc(BATCH);
            bench_free(BATCH);
        }
    } else if (!strcmp(argv[1], "wall")) {
        enum { REPS = 15 };
        double l[REPS], a[REPS], f[REPS];
        for (int r = 0; r < REPS; r++) {
            double t0 = _ns();
            bench_launch(n);
            l[r] = (_ns() - t0) / n;
            double ta = 0, tf = 0;
            for (int done = 0; done < n; done += BATCH) {
                double t1 = _ns();
                bench_alloc(BATCH);
                double t2 = _ns();
                bench_free(BATCH);
                ta += t2 - t1;
                tf += _ns() - t2;
            }
            a[r] = ta / n, f[r] = tf / n;
        }
        qsort(l, REPS, sizeof(double), _cmp);
        qsort(a, REPS, sizeof(double), _cmp);
        qsort(f, REPS, sizeof(double), _cmp);
        printf("%.1f %.1f %.1f\n", l[REPS / 2], a[REPS / 2], f[REPS / 2]);
    } else
        return 2;
    return 0;
}
