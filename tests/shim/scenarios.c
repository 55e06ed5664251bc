/* scenarios.c: programs run under the shim against the fake driver.
 * `scenarios <name>` runs one scenario; exit 0 = pass. tests/shim/run.sh sets the
 * environment (LD_PRELOAD, LD_LIBRARY_PATH, TESSERA_CUDA_*, FAKECU_*) per scenario. */
#include "services/cuda-shim/hooks.h"
#include "libcommon/cuda_region.h"
#include "tests/shim/fake_state.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

void fakecu_fail_next_alloc(int n);
CUdeviceptr fakecu_raw_alloc(size_t bytes);
int64_t fakecu_my_busy_ns(void);
fake_state *fakecu_state(void);
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned n);

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static int _fails;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "  FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                      \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            _fails++;                                                                              \
        }                                                                                          \
    } while (0)

static uint64_t _used(void)
{
    size_t f = 0, t = 0;
    if (cuMemGetInfo_v2(&f, &t) != CUDA_SUCCESS) return UINT64_MAX;
    return t - f;
}

static int64_t _live(void)
{
    return atomic_load(&fakecu_state()->live[0]);
}

/* ---- every allocation path is counted and returned --------------------------------- */
static int scen_alloc_paths(void)
{
    cuInit(0);
    CUdeviceptr p;
    size_t pitch;
    CHECK(_used() == 0, "start used=%llu", (unsigned long long)_used());

    CHECK(cuMemAlloc_v2(&p, 3 * MiB) == CUDA_SUCCESS, "alloc");
    CHECK(_used() == 3 * MiB, "cuMemAlloc used=%llu", (unsigned long long)_used());
    CHECK(cuMemFree_v2(p) == CUDA_SUCCESS && _used() == 0, "free");

    CHECK(cuMemAllocPitch_v2(&p, &pitch, 1000, 100, 4) == CUDA_SUCCESS, "pitch");
    CHECK(pitch == 1024 && _used() == 1024 * 100, "pitch=%zu used=%llu", pitch,
          (unsigned long long)_used());
    CHECK(cuMemFree_v2(p) == CUDA_SUCCESS && _used() == 0, "pitch free");

    CHECK(cuMemAllocManaged(&p, 5 * MiB, 1) == CUDA_SUCCESS && _used() == 5 * MiB, "managed");
    CHECK(cuMemFree_v2(p) == CUDA_SUCCESS && _used() == 0, "managed free");

    /* stream-ordered: the pool keeps freed memory until trimmed; so does the count */
    CUmemoryPool pool;
    CHECK(cuDeviceGetMemPool(&pool, 0) == CUDA_SUCCESS, "pool");
    CHECK(cuMemAllocAsync(&p, 8 * MiB, NULL) == CUDA_SUCCESS && _used() == 8 * MiB, "async");
    CHECK(cuMemFreeAsync(p, NULL) == CUDA_SUCCESS, "free async");
    CHECK(_used() == 8 * MiB && _live() == (int64_t)(8 * MiB), "cached used=%llu live=%lld",
          (unsigned long long)_used(), (long long)_live());
    CHECK(cuMemAllocAsync_ptsz(&p, 6 * MiB, NULL) == CUDA_SUCCESS && _used() == 8 * MiB,
          "reuse used=%llu", (unsigned long long)_used());
    CHECK(cuMemFreeAsync_ptsz(p, NULL) == CUDA_SUCCESS, "free async ptsz");
    CHECK(cuMemPoolTrimTo(pool, 2 * MiB) == CUDA_SUCCESS && _used() == 2 * MiB, "trim used=%llu",
          (unsigned long long)_used());
    CHECK(cuMemPoolTrimTo(pool, 0) == CUDA_SUCCESS && _used() == 0 && _live() == 0, "trim0");

    CUmemoryPool own;
    CUmemPoolProps props;
    memset(&props, 0, sizeof(props));
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CHECK(cuMemPoolCreate(&own, &props) == CUDA_SUCCESS, "pool create");
    CHECK(cuMemAllocFromPoolAsync(&p, 4 * MiB, own, NULL) == CUDA_SUCCESS && _used() == 4 * MiB,
          "from pool");
    CHECK(cuMemFree_v2(p) == CUDA_SUCCESS && cuMemPoolTrimTo(own, 0) == CUDA_SUCCESS &&
              _used() == 0,
          "from pool free used=%llu", (unsigned long long)_used());

    /* VMM on a thread without a current context: the device comes from prop */
    cuCtxSetCurrent(NULL);
    CUmemAllocationProp mp;
    memset(&mp, 0, sizeof(mp));
    mp.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    mp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    mp.location.id = 0;
    CUmemGenericAllocationHandle h;
    CHECK(cuMemCreate(&h, 2 * MiB, &mp, 0) == CUDA_SUCCESS, "vmm");
    CUcontext ctx;
    cuDevicePrimaryCtxRetain(&ctx, 0);
    cuCtxSetCurrent(ctx);
    CHECK(_used() == 2 * MiB, "vmm used=%llu", (unsigned long long)_used());
    CHECK(cuMemRelease(h) == CUDA_SUCCESS && _used() == 0, "vmm release");

    CUarray a;
    CUDA_ARRAY_DESCRIPTOR d2 = {
        .Width = 100, .Height = 100, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
    CHECK(cuArrayCreate_v2(&a, &d2) == CUDA_SUCCESS, "array");
    CHECK(_used() == 163840 && _used() == (uint64_t)_live(), "array used=%llu live=%lld",
          (unsigned long long)_used(), (long long)_live());
    CHECK(cuArrayDestroy(a) == CUDA_SUCCESS && _used() == 0, "array destroy");
    CUDA_ARRAY3D_DESCRIPTOR d3 = {.Width = 64,
                                  .Height = 64,
                                  .Depth = 64,
                                  .Format = CU_AD_FORMAT_UNSIGNED_INT8,
                                  .NumChannels = 1};
    CHECK(cuArray3DCreate_v2(&a, &d3) == CUDA_SUCCESS && _used() == 262144, "array3d used=%llu",
          (unsigned long long)_used());
    CHECK(cuArrayDestroy(a) == CUDA_SUCCESS && _used() == 0, "array3d destroy");
    CUmipmappedArray m;
    CHECK(cuMipmappedArrayCreate(&m, &d3, 3) == CUDA_SUCCESS && _used() == (uint64_t)_live() &&
              _used() > 262144,
          "mipmap used=%llu live=%lld", (unsigned long long)_used(), (long long)_live());
    CHECK(cuMipmappedArrayDestroy(m) == CUDA_SUCCESS && _used() == 0, "mipmap destroy");

    /* driver failure rolls the reservation back */
    fakecu_fail_next_alloc(1);
    CHECK(cuMemAlloc_v2(&p, MiB) == CUDA_ERROR_OUT_OF_MEMORY && _used() == 0, "rollback");
    fakecu_fail_next_alloc(1);
    CHECK(cuMemCreate(&h, MiB, &mp, 0) != CUDA_SUCCESS && _used() == 0, "vmm rollback");
    /* a free of memory the shim never saw passes through and cannot underflow */
    CUdeviceptr raw = fakecu_raw_alloc(MiB);
    CHECK(cuMemFree_v2(raw) == CUDA_SUCCESS && _used() == 0, "unknown free");
    CHECK(_live() == 0, "live=%lld", (long long)_live());
    return _fails;
}

/* ---- the cap: byte-exact, CUDA_ERROR_OUT_OF_MEMORY, driver not called ----------------- */
static int scen_oom(void)
{
    cuInit(0);
    CUdeviceptr p[8];
    for (int i = 0; i < 4; i++)
        CHECK(cuMemAlloc_v2(&p[i], 16 * MiB) == CUDA_SUCCESS, "alloc %d", i);
    int64_t calls = atomic_load(&fakecu_state()->driver_allocs);
    CHECK(cuMemAlloc_v2(&p[4], 1) == CUDA_ERROR_OUT_OF_MEMORY, "over by one byte");
    CHECK(cuMemAllocManaged(&p[4], MiB, 1) == CUDA_ERROR_OUT_OF_MEMORY, "managed over");
    CHECK(cuMemAllocAsync(&p[4], MiB, NULL) == CUDA_ERROR_OUT_OF_MEMORY, "async over");
    CUarray a;
    CUDA_ARRAY_DESCRIPTOR d2 = {
        .Width = 64, .Height = 64, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CHECK(cuArrayCreate_v2(&a, &d2) == CUDA_ERROR_OUT_OF_MEMORY, "array over");
    CHECK(atomic_load(&fakecu_state()->driver_allocs) == calls, "driver was called");
    CHECK(cuMemFree_v2(p[3]) == CUDA_SUCCESS, "free");
    CHECK(cuMemAlloc_v2(&p[3], 16 * MiB) == CUDA_SUCCESS, "exactly to the cap");
    CHECK(cuMemAlloc_v2(&p[4], 1) == CUDA_ERROR_OUT_OF_MEMORY, "full again");
    for (int i = 0; i < 4; i++)
        CHECK(cuMemFree_v2(p[i]) == CUDA_SUCCESS, "free %d", i);
    CHECK(_used() == 0 && _live() == 0, "used=%llu", (unsigned long long)_used());
    return _fails;
}

/* ---- memory views ------------------------------------------------------------------ */
static int scen_views(void)
{
    uint64_t cap = strtoull(getenv("EXPECT_TOTAL"), NULL, 10);
    uint64_t free0 = strtoull(getenv("EXPECT_FREE"), NULL, 10);
    cuInit(0);
    size_t f, t, tm;
    CHECK(cuMemGetInfo_v2(&f, &t) == CUDA_SUCCESS && t == cap && f == free0,
          "memgetinfo f=%zu t=%zu", f, t);
    CHECK(cuDeviceTotalMem_v2(&tm, 0) == CUDA_SUCCESS && tm == cap, "totalmem %zu", tm);
    CUdeviceptr p;
    CHECK(cuMemAlloc_v2(&p, 256 * MiB) == CUDA_SUCCESS, "alloc");
    uint64_t want_free = free0 - 256 * MiB;
    CHECK(cuMemGetInfo_v2(&f, &t) == CUDA_SUCCESS && t == cap && f == want_free,
          "after alloc f=%zu", f);
    /* NVML, linked directly and through dlopen + dlsym */
    nvmlDevice_t d;
    nvmlInit_v2();
    nvmlDeviceGetHandleByIndex_v2(0, &d);
    nvmlMemory_t m;
    nvmlMemory_v2_t m2 = {.version = 2};
    CHECK(nvmlDeviceGetMemoryInfo(d, &m) == 0 && m.total == cap && m.free == want_free &&
              m.used == cap - want_free,
          "nvml total=%llu free=%llu used=%llu", m.total, m.free, m.used);
    CHECK(nvmlDeviceGetMemoryInfo_v2(d, &m2) == 0 && m2.total == cap && m2.free == want_free,
          "nvml v2 total=%llu free=%llu", m2.total, m2.free);
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    tshim_pfn_nvmlDeviceGetMemoryInfo fn =
        (tshim_pfn_nvmlDeviceGetMemoryInfo)dlsym(h, "nvmlDeviceGetMemoryInfo");
    CHECK(fn == nvmlDeviceGetMemoryInfo, "dlsym nvml gave %p", (void *)fn);
    CHECK(cuMemFree_v2(p) == CUDA_SUCCESS, "free");
    return _fails;
}

/* ---- cuGetProcAddress and dlsym hand out the wrappers -------------------------------- */
static int scen_procaddr(void)
{
    cuInit(0);
    void *fp = NULL;
    CUdriverProcAddressQueryResult st;
    CHECK(cuGetProcAddress_v2("cuMemAlloc", &fp, 12000, 0, &st) == CUDA_SUCCESS &&
              st == CU_GET_PROC_ADDRESS_SUCCESS && fp == (void *)cuMemAlloc_v2,
          "v2 cuMemAlloc %p", fp);
    CHECK(cuGetProcAddress("cuMemFree", &fp, 11030, 0) == CUDA_SUCCESS &&
              fp == (void *)cuMemFree_v2,
          "v1 cuMemFree");
    CHECK(cuGetProcAddress_v2("cuLaunchKernel", &fp, 12000,
                              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st) == CUDA_SUCCESS &&
              fp == (void *)cuLaunchKernel_ptsz,
          "ptsz launch");
    CHECK(cuGetProcAddress_v2("cuLaunchKernel", &fp, 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                              &st) == CUDA_SUCCESS &&
              fp == (void *)cuLaunchKernel,
          "legacy launch");
    CHECK(cuGetProcAddress_v2("cuMemAllocAsync", &fp, 12000,
                              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st) == CUDA_SUCCESS &&
              fp == (void *)cuMemAllocAsync_ptsz,
          "ptsz async");
    CHECK(cuGetProcAddress_v2("cuMemCreate", &fp, 12000,
                              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st) == CUDA_SUCCESS &&
              fp == (void *)cuMemCreate,
          "no ptsz variant");
    CHECK(cuGetProcAddress_v2("cuGetProcAddress", &fp, 12000, 0, &st) == CUDA_SUCCESS &&
              fp == (void *)cuGetProcAddress_v2,
          "cuGetProcAddress itself");
    CHECK(cuGetProcAddress_v2("cuInit", &fp, 12000, 0, &st) == CUDA_SUCCESS && fp != NULL &&
              fp != dlsym(RTLD_DEFAULT, "dlsym"),
          "unhooked passes");
    CHECK(cuGetProcAddress_v2("cuNoSuchThing", &fp, 12000, 0, &st) == CUDA_ERROR_NOT_FOUND &&
              st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
          "not found status");
    CHECK(cuGetProcAddress_v2("cuMemAllocAsync", &fp, 11000, 0, &st) != CUDA_SUCCESS &&
              st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT,
          "version status %d", (int)st);

    /* libcudart's way in: dlopen libcuda, dlsym cuGetProcAddress_v2, fetch by name */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL, "dlopen");
    tshim_pfn_cuGetProcAddress_v2 gpa =
        (tshim_pfn_cuGetProcAddress_v2)dlsym(h, "cuGetProcAddress_v2");
    CHECK(gpa == cuGetProcAddress_v2, "dlsym(handle, cuGetProcAddress_v2) %p", (void *)gpa);
    CHECK(dlsym(h, "cuMemAlloc_v2") == (void *)cuMemAlloc_v2, "dlsym(handle, cuMemAlloc_v2)");
    CHECK(dlsym(h, "cuInit") != NULL && dlsym(h, "cuInit") == dlsym(RTLD_DEFAULT, "cuInit"),
          "dlsym cuInit");
    CHECK(dlsym(RTLD_NEXT, "malloc") != NULL, "RTLD_NEXT");
    tshim_pfn_cuMemAlloc_v2 alloc = NULL;
    tshim_pfn_cuMemFree_v2 free_fn = NULL;
    CHECK(gpa("cuMemAlloc", (void **)&alloc, 12000, 0, &st) == CUDA_SUCCESS, "gpa alloc");
    CHECK(gpa("cuMemFree", (void **)&free_fn, 12000, 0, &st) == CUDA_SUCCESS, "gpa free");
    /* the cap (64 MiB) holds through fetched pointers */
    CUdeviceptr p, q;
    CHECK(alloc(&p, 48 * MiB) == CUDA_SUCCESS, "fetched alloc");
    CHECK(alloc(&q, 32 * MiB) == CUDA_ERROR_OUT_OF_MEMORY, "fetched alloc over cap");
    CHECK(free_fn(p) == CUDA_SUCCESS && _used() == 0, "fetched free");
    return _fails;
}

/* ---- 8 processes race under one cap ------------------------------------------------ */
#define RACER_NO_OOM 5
static int _racer(unsigned seed, int ms)
{
    cuInit(0);
    CUdeviceptr held[64];
    size_t sizes[64];
    int n = 0, ooms = 0;
    int64_t end = fake_now_ns() + (int64_t)ms * 1000000;
    while (fake_now_ns() < end) {
        seed = seed * 1103515245u + 12345u;
        if (n < 64 && (seed >> 16) % 3) {
            size_t sz = ((seed >> 8) % (16 * MiB)) + 1;
            CUresult r;
            switch ((seed >> 4) % 3) {
            case 0:
                r = cuMemAlloc_v2(&held[n], sz);
                break;
            case 1:
                r = cuMemAllocManaged(&held[n], sz, 1);
                break;
            default: {
                size_t pitch;
                r = cuMemAllocPitch_v2(&held[n], &pitch, sz / 64 + 1, 64, 4);
            }
            }
            if (r == CUDA_SUCCESS)
                sizes[n++] = sz;
            else if (r == CUDA_ERROR_OUT_OF_MEMORY)
                ooms++;
            else
                return 2;
        } else if (n > 0) {
            int i = (int)((seed >> 8) % (unsigned)n);
            if (cuMemFree_v2(held[i]) != CUDA_SUCCESS) return 3;
            held[i] = held[--n];
            sizes[i] = sizes[n];
        }
    }
    /* leave half of it for process exit to return */
    for (int i = 0; i < n / 2; i++)
        cuMemFree_v2(held[i]);
    /* whether this racer met the cap depends on how the others were scheduled */
    return ooms > 0 ? 0 : RACER_NO_OOM;
}

static int scen_race(void)
{
    uint64_t cap = strtoull(getenv("EXPECT_TOTAL"), NULL, 10);
    pid_t kids[8];
    for (int i = 0; i < 8; i++) {
        kids[i] = fork();
        if (kids[i] == 0) exit(_racer(0x9e3779b9u * (unsigned)(i + 1), 1500));
    }
    int met_cap = 0;
    for (int i = 0; i < 8; i++) {
        int st;
        waitpid(kids[i], &st, 0);
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        CHECK(code == 0 || code == RACER_NO_OOM, "racer %d status %d", i, st);
        met_cap += code == 0;
    }
    CHECK(met_cap > 0, "no racer was ever refused at the cap");
    fake_state *s = fakecu_state();
    printf("  race: cap=%llu driver high-water=%lld live-after=%lld\n", (unsigned long long)cap,
           (long long)atomic_load(&s->high[0]), (long long)atomic_load(&s->live[0]));
    CHECK(atomic_load(&s->high[0]) <= (int64_t)cap, "high-water %lld over cap",
          (long long)atomic_load(&s->high[0]));
    CHECK(atomic_load(&s->high[0]) > (int64_t)(cap / 2), "cap never approached");
    CHECK(atomic_load(&s->live[0]) == 0, "driver live %lld", (long long)atomic_load(&s->live[0]));
    cuInit(0);
    CHECK(_used() == 0, "container usage after exit %llu", (unsigned long long)_used());
    return _fails;
}

/* ---- a process killed with -9 while holding the lock blocks nobody ------------------- */
static int scen_kill9(void)
{
    int pfd[2];
    if (pipe(pfd) != 0) return 1;
    pid_t a = fork();
    if (a == 0) {
        setenv("TESSERA_CUDA_TEST_HOLD_LOCK_MS", "700", 1);
        cuInit(0);
        CUdeviceptr p;
        if (cuMemAlloc_v2(&p, 40 * MiB) != CUDA_SUCCESS) _exit(2);
        if (write(pfd[1], "x", 1) != 1) _exit(3);
        cuMemAlloc_v2(&p, MiB); /* killed in here, holding the lock */
        _exit(4);
    }
    char c;
    CHECK(read(pfd[0], &c, 1) == 1, "child did not allocate");
    usleep(200000);
    kill(a, SIGKILL);
    int st;
    waitpid(a, &st, 0);
    CHECK(WIFSIGNALED(st), "child was not killed: %d", st);
    int64_t t0 = fake_now_ns();
    cuInit(0);
    CUdeviceptr p;
    /* 48 MiB fits only once the dead child's 40 MiB (of 64) are returned */
    CUresult r = cuMemAlloc_v2(&p, 48 * MiB);
    int64_t ms = (fake_now_ns() - t0) / 1000000;
    printf("  kill9: next allocation after %lld ms: %d\n", (long long)ms, (int)r);
    CHECK(r == CUDA_SUCCESS, "allocation failed: %d", (int)r);
    CHECK(ms < 500, "blocked %lld ms", (long long)ms);
    CHECK(_used() == 48 * MiB, "used %llu", (unsigned long long)_used());
    cuMemFree_v2(p);
    return _fails;
}

/* ---- compute share ------------------------------------------------------------------ */
static double _run_share(int ms, int kernel_us, int path)
{
    cuInit(0);
    int64_t t0 = fake_now_ns(), end = t0 + (int64_t)ms * 1000000;
    CUfunction f = (CUfunction)(uintptr_t)kernel_us;
    CUlaunchConfig cfg = {.gridDimX = 1,
                          .gridDimY = 1,
                          .gridDimZ = 1,
                          .blockDimX = 1,
                          .blockDimY = 1,
                          .blockDimZ = 1};
    while (fake_now_ns() < end) {
        switch (path) {
        case 0:
            cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
            break;
        case 1:
            cuLaunchKernelEx(&cfg, f, NULL, NULL);
            break;
        case 2:
            cuGraphLaunch((CUgraphExec)f, NULL);
            break;
        default:
            cuLaunchCooperativeKernel_ptsz(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL);
            break;
        }
    }
    /* GPU time of work that completed inside the window */
    int64_t queued = atomic_load(&fakecu_state()->busy_until[0]) - fake_now_ns();
    int64_t done = fakecu_my_busy_ns() - (queued > 0 ? queued : 0);
    return (double)done / (double)(fake_now_ns() - t0);
}

static int scen_share(void)
{
    double want = strtod(getenv("TESSERA_CUDA_COMPUTE_SHARE"), NULL);
    int path = atoi(getenv("SHARE_PATH") ? getenv("SHARE_PATH") : "0");
    int kus = atoi(getenv("SHARE_KERNEL_US") ? getenv("SHARE_KERNEL_US") : "1000");
    double got = _run_share(atoi(getenv("SHARE_MS") ? getenv("SHARE_MS") : "2000"), kus, path);
    printf("  share: path=%d kernel=%dus target=%.2f measured=%.3f error=%+.1fpp\n", path, kus,
           want, got, (got - want) * 100);
    if (getenv("SHARE_REPORT_ONLY")) return 0;
    CHECK(got > want - 0.05 && got < want + 0.05, "share %.3f vs %.2f", got, want);
    return _fails;
}

/* Prints this process's GPU-time fraction only (the runner combines processes). */
static int scen_share_worker(void)
{
    double got = _run_share(atoi(getenv("SHARE_MS")), atoi(getenv("SHARE_KERNEL_US")), 0);
    printf("%.4f\n", got);
    return 0;
}

/* ---- GPU time in the region: BUSY_N launches of SHARE_KERNEL_US each; with a share
 * the region's busy_ns[0] is their GPU time (within 5 %), without one it is 0 and
 * busy_counted is 0 (nothing is measured, nothing is made up). */
static int scen_busy(void)
{
    int n = atoi(getenv("BUSY_N") ? getenv("BUSY_N") : "200");
    int kus = atoi(getenv("SHARE_KERNEL_US") ? getenv("SHARE_KERNEL_US") : "1000");
    bool limited = getenv("TESSERA_CUDA_COMPUTE_SHARE") != NULL;
    cuInit(0);
    CUdeviceptr p; /* an allocation makes the region with or without a share */
    CHECK(cuMemAlloc_v2(&p, MiB) == CUDA_SUCCESS, "alloc");
    CUfunction f = (CUfunction)(uintptr_t)kus;
    for (int i = 0; i < n; i++)
        CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) == CUDA_SUCCESS, "launch");
    cuCtxSynchronize();
    /* one more launch of it after the work is done collects the pending samples */
    CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) == CUDA_SUCCESS, "launch");
    cuCtxSynchronize();
    n++;
    char path[512];
    snprintf(path, sizeof(path), "%s/" CUDA_REGION_FILE, getenv("TESSERA_CUDA_SHARED_DIR"));
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0, "open %s", path);
    if (fd < 0) return _fails;
    const cuda_region *r = mmap(NULL, sizeof(*r), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    CHECK(r != MAP_FAILED, "mmap");
    if (r == MAP_FAILED) return _fails;
    int64_t busy = atomic_load(&((cuda_region *)r)->busy_ns[0]);
    int64_t other = atomic_load(&((cuda_region *)r)->busy_ns[1]);
    unsigned counted = atomic_load(&((cuda_region *)r)->busy_counted);
    int64_t want = (int64_t)n * kus * 1000;
    printf("  busy: version=%u counted=%u launches=%d kernel=%dus busy_ns=%lld want=%lld "
           "fake_gpu_ns=%lld\n",
           r->version, counted, n, kus, (long long)busy, limited ? (long long)want : 0LL,
           (long long)fakecu_my_busy_ns());
    CHECK(r->version == CUDA_REGION_VERSION, "version %u", r->version);
    CHECK(other == 0, "device 1 busy %lld", (long long)other);
    if (limited) {
        CHECK(counted == 1, "busy_counted %u", counted);
        CHECK(busy > want - want / 20 && busy < want + want / 20, "busy %lld vs %lld",
              (long long)busy, (long long)want);
    } else {
        CHECK(counted == 0, "busy_counted %u", counted);
        CHECK(busy == 0, "busy %lld without a share", (long long)busy);
    }
    munmap((void *)r, sizeof(*r));
    cuMemFree_v2(p);
    return _fails;
}

/* ---- NVML visibility: the container's GPUs, in CUDA order, by UUID -------------------
 * VIS_EXPECT: the CUDA ordinals NVML must show, in its index order ("2,0"), or
 * "all" for no filtering (the fake NVML's own reversed order); VIS_TOTALS
 * (optional): NVML's memory total in bytes per visible index ("1073741824,..."). */
static void _cu_uuid(int ordinal, char *out, size_t n)
{
    CUuuid u;
    memset(&u, 0, sizeof(u));
    if (cuDeviceGetUuid_v2(&u, ordinal) != CUDA_SUCCESS) snprintf(out, n, "(no uuid)");
    const unsigned char *b = (const unsigned char *)u.bytes;
    snprintf(out, n, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

static int scen_visibility(void)
{
    int physical = (int)fake_env_i64("FAKECU_DEVICES", 1), expect[FAKE_MAX_DEV], n = 0;
    unsigned long long totals[FAKE_MAX_DEV] = {0};
    const char *e = getenv("VIS_EXPECT");
    if (!e || !strcmp(e, "all")) {
        for (int i = 0; i < physical; i++)
            expect[n++] = physical - 1 - i;
    } else {
        for (char *p = (char *)e; *p && n < FAKE_MAX_DEV; p += *p == ',')
            expect[n++] = (int)strtol(p, &p, 10);
    }
    const char *t = getenv("VIS_TOTALS"); /* bytes, comma-separated */
    for (int i = 0; t && *t && i < FAKE_MAX_DEV; i++) {
        char *end;
        totals[i] = strtoull(t, &end, 10);
        t = *end == ',' ? end + 1 : end;
    }
    cuInit(0);
    CHECK(nvmlInit_v2() == 0, "nvmlInit");
    unsigned count = 99, count1 = 99;
    CHECK(nvmlDeviceGetCount_v2(&count) == 0 && count == (unsigned)n, "count_v2=%u want %d", count,
          n);
    CHECK(nvmlDeviceGetCount(&count1) == 0 && count1 == (unsigned)n, "count=%u", count1);
    CHECK(nvmlDeviceGetCount_v2(NULL) != 0, "count_v2(NULL) succeeded");
    bool shown[FAKE_MAX_DEV] = {false};
    for (int i = 0; i < n; i++) {
        nvmlDevice_t d = NULL, d1 = NULL, by = NULL;
        char want[96], got[96] = "", bus[32], serial[32];
        _cu_uuid(expect[i], want, sizeof(want));
        shown[expect[i]] = true;
        CHECK(nvmlDeviceGetHandleByIndex_v2((unsigned)i, &d) == 0, "handle %d", i);
        CHECK(nvmlDeviceGetHandleByIndex((unsigned)i, &d1) == 0 && d1 == d, "handle v1 %d", i);
        if (!d) continue;
        CHECK(nvmlDeviceGetUUID(d, got, sizeof(got)) == 0 && !strcmp(got, want),
              "index %d is %s, CUDA ordinal %d is %s", i, got, expect[i], want);
        unsigned idx = 99;
        CHECK(nvmlDeviceGetIndex(d, &idx) == 0 && idx == (unsigned)i, "GetIndex=%u want %d", idx,
              i);
        CHECK(nvmlDeviceGetHandleByUUID(want, &by) == 0 && by == d, "by uuid %s", want);
        snprintf(bus, sizeof(bus), "00000000:%02X:00.0", expect[i]);
        CHECK(nvmlDeviceGetHandleByPciBusId_v2(bus, &by) == 0 && by == d, "by bus %s", bus);
        snprintf(serial, sizeof(serial), "fake-%d", expect[i]);
        CHECK(nvmlDeviceGetHandleBySerial(serial, &by) == 0 && by == d, "by serial %s", serial);
        /* the memory views of a visible GPU are its CUDA ordinal's */
        nvmlMemory_t m;
        nvmlMemory_v2_t m2 = {.version = 2};
        size_t cu_total = 0;
        CHECK(cuDeviceTotalMem_v2(&cu_total, expect[i]) == CUDA_SUCCESS, "totalmem");
        CHECK(nvmlDeviceGetMemoryInfo(d, &m) == 0 && m.total == cu_total && m.free == m.total,
              "index %d nvml total=%llu free=%llu, CUDA ordinal %d total=%zu", i, m.total, m.free,
              expect[i], cu_total);
        CHECK(nvmlDeviceGetMemoryInfo_v2(d, &m2) == 0 && m2.total == cu_total, "v2 total=%llu",
              m2.total);
        if (totals[i])
            CHECK(m.total == totals[i], "index %d total=%llu want %llu", i, m.total, totals[i]);
    }
    nvmlDevice_t past;
    CHECK(nvmlDeviceGetHandleByIndex_v2((unsigned)n, &past) == TSHIM_NVML_ERROR_INVALID_ARGUMENT,
          "index %d past the count", n);
    for (int c = 0; c < physical; c++) {
        if (shown[c]) continue;
        nvmlDevice_t d = NULL;
        char uuid[96], bus[32], serial[32];
        _cu_uuid(c, uuid, sizeof(uuid));
        snprintf(bus, sizeof(bus), "00000000:%02X:00.0", c);
        snprintf(serial, sizeof(serial), "fake-%d", c);
        CHECK(nvmlDeviceGetHandleByUUID(uuid, &d) == TSHIM_NVML_ERROR_NOT_FOUND,
              "hidden %s found by uuid", uuid);
        CHECK(nvmlDeviceGetHandleByPciBusId_v2(bus, &d) == TSHIM_NVML_ERROR_NOT_FOUND,
              "hidden %s found by bus id", bus);
        CHECK(nvmlDeviceGetHandleBySerial(serial, &d) == TSHIM_NVML_ERROR_NOT_FOUND,
              "hidden %s found by serial", serial);
    }
    /* dlsym on libnvidia-ml's own handle gives the hooks too */
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK(dlsym(h, "nvmlDeviceGetCount_v2") == (void *)nvmlDeviceGetCount_v2, "dlsym count");
    CHECK(dlsym(h, "nvmlDeviceGetHandleByIndex_v2") == (void *)nvmlDeviceGetHandleByIndex_v2,
          "dlsym by index");
    CHECK(dlsym(h, "nvmlDeviceGetHandleByUUID") == (void *)nvmlDeviceGetHandleByUUID,
          "dlsym by uuid");
    return _fails;
}

/* ---- no stderr noise, config file wins over the environment -------------------------- */
static int scen_config_file(void)
{
    cuInit(0);
    size_t f, t;
    CHECK(cuMemGetInfo_v2(&f, &t) == CUDA_SUCCESS && t == 32 * MiB, "file cap not applied: %zu", t);
    return _fails;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(void);
    } scen[] = {{"alloc_paths", scen_alloc_paths},
                {"oom", scen_oom},
                {"views", scen_views},
                {"procaddr", scen_procaddr},
                {"race", scen_race},
                {"kill9", scen_kill9},
                {"share", scen_share},
                {"share_worker", scen_share_worker},
                {"busy", scen_busy},
                {"config_file", scen_config_file},
                {"visibility", scen_visibility}};
    if (argc < 2) return 2;
    for (size_t i = 0; i < sizeof(scen) / sizeof(scen[0]); i++)
        if (!strcmp(argv[1], scen[i].name)) return scen[i].fn() ? 1 : 0;
    fprintf(stderr, "unknown scenario %s\n", argv[1]);
    return 2;
}
