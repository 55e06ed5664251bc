/* workload.c: the scheduler benchmarks' request mix (workload.h). */
#include "bench/scheduler/workload.h"

#include <stdio.h>

static uint64_t rng = 0x9E3779B97F4A7C15ull;

uint32_t bench_rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

uint64_t bench_rnd_state(void)
{
    return rng;
}

void bench_rnd_restore(uint64_t state)
{
    rng = state;
}

void bench_next_request(bench_request *out)
{
    static const char *small[] = {"0.1", "0.25", "0.5", "0.75"};
    static const char *large[] = {"0.75", "1.5", "2.5"};
    static const int whole[] = {1, 2, 2, 4};
    uint32_t p = bench_rnd(100);
    if (p < 40) {
        snprintf(out->text, sizeof(out->text), "cpu=2 mem=8g cuda.shares=%s", small[bench_rnd(4)]);
        out->kind = 'f';
    } else if (p < 50) {
        snprintf(out->text, sizeof(out->text), "cpu=4 mem=16g cuda.shares=%s", large[bench_rnd(3)]);
        out->kind = 'F';
    } else if (p < 60) {
        int n = whole[bench_rnd(4)];
        snprintf(out->text, sizeof(out->text), "cpu=%d mem=%dg cuda.device=%d", 4 * n, 16 * n, n);
        out->kind = 'w';
    } else {
        /* mem drawn before cpu: the order bench_placement's figures were measured with */
        int mem = 2 << bench_rnd(4), cpu = 1 << bench_rnd(3);
        snprintf(out->text, sizeof(out->text), "cpu=%d mem=%dg", cpu, mem);
        out->kind = 'c';
    }
}
