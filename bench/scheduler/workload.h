/* workload.h: the scheduler benchmarks' request mix (bench_placement.c and
 * bench_e2e.c draw the same one): 40% fractional GPU (0.1 to 0.75 of a
 * device), 10% fractional GPU above 0.75, 10% whole GPUs (1, 2 or 4), 40% cpu
 * only; from one fixed pseudo-random sequence, so every run asks the same. */
#ifndef TESSERA_BENCH_SCHED_WORKLOAD_H
#define TESSERA_BENCH_SCHED_WORKLOAD_H

#include <stdint.h>

typedef struct bench_request {
    char text[128]; /* "cpu=2 mem=8g cuda.shares=0.5" (slots_parse_text) */
    char kind;      /* f: fractional, F: fractional > 0.75, w: whole, c: cpu only */
} bench_request;

/* The sequence's next pseudo-random number below n. */
uint32_t bench_rnd(uint32_t n);
/* Where the sequence is, and back there (runs that must draw the same). */
uint64_t bench_rnd_state(void);
void bench_rnd_restore(uint64_t state);
/* The sequence's next request. */
void bench_next_request(bench_request *out);

#endif
