/* fake_state.h: state shared by the fake libcuda.so.1 and libnvidia-ml.so.1 and by
 * every process of a test (a file named by FAKECU_STATE, mmap'd MAP_SHARED; without
 * it, process-private). It is the "hardware": physical memory in use, its
 * high-water mark, and the GPU timeline the simulated kernels run on.
 *
 * Knobs (environment, read by the fakes): FAKECU_STATE, FAKECU_DEVICES (1),
 * FAKECU_TOTAL (bytes per device, 16 GiB), FAKECU_OTHER_USED (bytes held by
 * "other tenants", 0), FAKECU_PITCH_ALIGN (256). */
#ifndef TESSERA_FAKE_STATE_H
#define TESSERA_FAKE_STATE_H

#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define FAKE_MAX_DEV 8

typedef struct fake_state {
    _Atomic int64_t live[FAKE_MAX_DEV];       /* bytes physically held */
    _Atomic int64_t high[FAKE_MAX_DEV];       /* high-water mark of live */
    _Atomic int64_t busy_until[FAKE_MAX_DEV]; /* GPU timeline, CLOCK_MONOTONIC ns */
    _Atomic int64_t busy_total[FAKE_MAX_DEV]; /* kernel ns ever queued */
    _Atomic int64_t driver_allocs;            /* allocation calls that reached the fake */
} fake_state;

static fake_state _fake_private;

static inline fake_state *fake_state_get(void)
{
    static fake_state *st;
    if (st) return st;
    const char *path = getenv("FAKECU_STATE");
    fake_state *s = &_fake_private;
    if (path && *path) {
        int fd = open(path, O_RDWR | O_CREAT, 0600);
        if (fd >= 0) {
            off_t end = lseek(fd, 0, SEEK_END);
            if (end < (off_t)sizeof(fake_state) && ftruncate(fd, sizeof(fake_state)) != 0) end = -1;
            void *m = mmap(NULL, sizeof(fake_state), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (m != MAP_FAILED) s = m;
            close(fd);
        }
    }
    st = s;
    return st;
}

static inline int64_t fake_env_i64(const char *name, int64_t dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtoll(v, NULL, 10) : dflt;
}

static inline int64_t fake_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Knobs are read once: getenv on every call would dominate the benchmarks. */
static inline int64_t fake_total(void)
{
    static int64_t v = -1;
    if (v < 0) v = fake_env_i64("FAKECU_TOTAL", 16LL << 30);
    return v;
}

static inline int64_t fake_other_used(void)
{
    static int64_t v = -1;
    if (v < 0) v = fake_env_i64("FAKECU_OTHER_USED", 0);
    return v;
}

static inline int64_t fake_free(int dev)
{
    int64_t f = fake_total() - atomic_load(&fake_state_get()->live[dev]) - fake_other_used();
    return f < 0 ? 0 : f;
}

#endif
