/* fake_cuda.c: a fake libcuda.so.1 for testing the shim without a GPU.
 *
 * Device memory is host memory: every allocation is a small malloc'd record whose
 * address serves as the device pointer / handle, and the fake keeps the physical
 * bytes held (and their high-water mark) in the shared fake_state, so a test can
 * check the cap against what the "hardware" saw, not against the shim's counter.
 * Kernels are simulated: a CUfunction / CUgraphExec whose value is below 10^7 runs
 * for that many microseconds on a per-device timeline shared by all processes;
 * a launch blocks while more than 50 ms of work is queued (a full push buffer).
 * Events record their position on the timeline. By default an event pair
 * measures only this process's GPU work between them; with
 * FAKE_CUDA_EVENTS=wall it measures the timeline's wall time between their
 * stamps, as a real GPU does: that includes an idle stream's wait for the
 * host to submit the kernel, and other processes' work. FAKE_CUDA_FIRST_LAUNCH_US
 * makes the first launch of each function spend that long on the host before
 * it is queued (a real driver's lazy module loading).
 *
 * Test controls (exported, called directly by the test programs):
 *   fakecu_fail_next_alloc(n)  the next n allocations fail with OUT_OF_MEMORY
 *   fakecu_raw_alloc(bytes)    a device pointer the shim never saw
 *   fakecu_my_busy_ns()        simulated GPU ns this process has queued
 *   fakecu_state()             the shared fake_state */
#include "services/cuda-shim/hooks.h"
#include "tests/shim/fake_state.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define REC_MAGIC 0xFA4EC0DAu

enum { K_MEM = 1, K_VMM, K_ARRAY, K_MIPMAP, K_EVENT, K_POOL };

typedef struct rec {
    uint32_t magic;
    uint8_t kind;
    int dev;
    int64_t size;
    void *pool;
    int64_t t; /* events: position on the timeline; <0 = not recorded */
    int64_t v; /* events: GPU time this process had queued when recorded */
} rec;

typedef struct pool_rec {
    uint32_t magic;
    uint8_t kind;
    int dev;
    int64_t live, cached;
} pool_rec;

static __thread int _cur = -2; /* -2: process default (device 0), -1: no context */
static atomic_int _fail_next;
static _Atomic int64_t _my_busy, _my_live[FAKE_MAX_DEV];
static pool_rec _default_pool[FAKE_MAX_DEV];
static pthread_mutex_t _pool_mu = PTHREAD_MUTEX_INITIALIZER;

EXPORT void fakecu_fail_next_alloc(int n);
EXPORT CUdeviceptr fakecu_raw_alloc(size_t bytes);
EXPORT int64_t fakecu_my_busy_ns(void);
EXPORT fake_state *fakecu_state(void);

EXPORT void fakecu_fail_next_alloc(int n)
{
    atomic_store(&_fail_next, n);
}
EXPORT int64_t fakecu_my_busy_ns(void)
{
    return atomic_load(&_my_busy);
}
EXPORT fake_state *fakecu_state(void)
{
    return fake_state_get();
}

static int _devices(void)
{
    static int n;
    if (!n) n = (int)fake_env_i64("FAKECU_DEVICES", 1);
    return n;
}

static int _current(void)
{
    return _cur == -2 ? 0 : _cur;
}

static void _live_add(int dev, int64_t n)
{
    fake_state *s = fake_state_get();
    int64_t v = atomic_fetch_add(&s->live[dev], n) + n;
    atomic_fetch_add(&_my_live[dev], n);
    int64_t h = atomic_load(&s->high[dev]);
    while (v > h && !atomic_compare_exchange_weak(&s->high[dev], &h, v)) {
    }
}

/* Physical allocation: fault injection, then physical capacity. */
static CUresult _phys(int dev, int64_t size)
{
    atomic_fetch_add(&fake_state_get()->driver_allocs, 1);
    int f = atomic_load(&_fail_next);
    while (f > 0) {
        if (atomic_compare_exchange_weak(&_fail_next, &f, f - 1)) return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (size <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (size > fake_free(dev)) return CUDA_ERROR_OUT_OF_MEMORY;
    _live_add(dev, size);
    return CUDA_SUCCESS;
}

static rec *_rec(uint8_t kind, int dev, int64_t size)
{
    rec *r = calloc(1, sizeof(*r));
    r->magic = REC_MAGIC;
    r->kind = kind;
    r->dev = dev;
    r->size = size;
    r->t = -1;
    return r;
}

static rec *_check(uint64_t h, uint8_t kind)
{
    rec *r = (rec *)(uintptr_t)h;
    if (!r || r->magic != REC_MAGIC || r->kind != kind) return NULL;
    return r;
}

static void _drop(rec *r)
{
    _live_add(r->dev, -r->size);
    r->magic = 0;
    free(r);
}

/* The driver frees a process's memory when it exits. */
__attribute__((destructor)) static void _teardown(void)
{
    fake_state *s = fake_state_get();
    for (int d = 0; d < FAKE_MAX_DEV; d++)
        atomic_fetch_sub(&s->live[d], atomic_load(&_my_live[d]));
}

/* ---- init, devices, contexts ------------------------------------------------------ */
EXPORT CUresult cuInit(unsigned int flags)
{
    (void)flags;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDriverGetVersion(int *v)
{
    *v = 13000;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetCount(int *n)
{
    *n = _devices();
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    if (ordinal < 0 || ordinal >= _devices()) return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d)
{
    memset(u->bytes, 0xAB, sizeof(u->bytes));
    u->bytes[0] = (char)d;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d)
{
    if (d < 0 || d >= _devices()) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = (size_t)fake_total();
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d)
{
    *ctx = (CUcontext)(uintptr_t)(d + 1);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    _cur = ctx ? (int)(uintptr_t)ctx - 1 : -1;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxGetDevice(CUdevice *d)
{
    if (_current() < 0) return CUDA_ERROR_INVALID_CONTEXT;
    *d = _current();
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemGetInfo_v2(size_t *free_b, size_t *total)
{
    if (_current() < 0) return CUDA_ERROR_INVALID_CONTEXT;
    *free_b = (size_t)fake_free(_current());
    *total = (size_t)fake_total();
    return CUDA_SUCCESS;
}

/* ---- memory ---------------------------------------------------------------------- */
static CUresult _alloc(CUdeviceptr *p, int64_t size, uint8_t kind, int dev)
{
    if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    CUresult r = _phys(dev, size);
    if (r != CUDA_SUCCESS) return r;
    *p = (CUdeviceptr)(uintptr_t)_rec(kind, dev, size);
    return CUDA_SUCCESS;
}

EXPORT CUdeviceptr fakecu_raw_alloc(size_t bytes)
{
    CUdeviceptr p = 0;
    return _alloc(&p, (int64_t)bytes, K_MEM, 0) == CUDA_SUCCESS ? p : 0;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size)
{
    return _alloc(p, (int64_t)size, K_MEM, _current());
}
EXPORT CUresult cuMemAllocManaged(CUdeviceptr *p, size_t size, unsigned flags)
{
    (void)flags;
    return _alloc(p, (int64_t)size, K_MEM, _current());
}
EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned e)
{
    (void)e;
    static size_t a;
    if (!a) a = (size_t)fake_env_i64("FAKECU_PITCH_ALIGN", 256);
    *pitch = (w + a - 1) / a * a;
    return _alloc(p, (int64_t)(*pitch * h), K_MEM, _current());
}

static pool_rec *_pool_of(CUmemoryPool pool)
{
    pool_rec *p = (pool_rec *)pool;
    return p && p->magic == REC_MAGIC && p->kind == K_POOL ? p : NULL;
}

EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice d)
{
    pool_rec *p = &_default_pool[d];
    p->magic = REC_MAGIC;
    p->kind = K_POOL;
    p->dev = d;
    *pool = (CUmemoryPool)p;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    pool_rec *p = calloc(1, sizeof(*p));
    p->magic = REC_MAGIC;
    p->kind = K_POOL;
    p->dev = props ? props->location.id : 0;
    *pool = (CUmemoryPool)p;
    return CUDA_SUCCESS;
}

/* A pool reuses its cached (freed, not trimmed) memory before asking for more. */
static CUresult _pool_alloc(CUdeviceptr *dptr, size_t size, pool_rec *p)
{
    pthread_mutex_lock(&_pool_mu);
    int64_t take = p->cached < (int64_t)size ? p->cached : (int64_t)size;
    p->cached -= take;
    pthread_mutex_unlock(&_pool_mu);
    CUresult r = (int64_t)size - take > 0 ? _phys(p->dev, (int64_t)size - take) : CUDA_SUCCESS;
    pthread_mutex_lock(&_pool_mu);
    if (r == CUDA_SUCCESS)
        p->live += (int64_t)size;
    else
        p->cached += take;
    pthread_mutex_unlock(&_pool_mu);
    if (r != CUDA_SUCCESS) return r;
    rec *x = _rec(K_MEM, p->dev, 0); /* the pool owns the physical bytes */
    x->pool = p;
    x->size = (int64_t)size;
    *dptr = (CUdeviceptr)(uintptr_t)x;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *p, size_t size, CUstream s)
{
    (void)s;
    CUmemoryPool pool;
    if (_current() < 0) return CUDA_ERROR_INVALID_CONTEXT;
    cuDeviceGetMemPool(&pool, _current());
    return _pool_alloc(p, size, _pool_of(pool));
}
EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *p, size_t size, CUstream s)
{
    return cuMemAllocAsync(p, size, s);
}
EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t size, CUmemoryPool pool, CUstream s)
{
    (void)s;
    pool_rec *pr = _pool_of(pool);
    return pr ? _pool_alloc(p, size, pr) : CUDA_ERROR_INVALID_VALUE;
}
EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *p, size_t size, CUmemoryPool pool,
                                             CUstream s)
{
    return cuMemAllocFromPoolAsync(p, size, pool, s);
}

static CUresult _free(CUdeviceptr d)
{
    rec *r = _check(d, K_MEM);
    if (!r) return CUDA_ERROR_INVALID_VALUE;
    if (r->pool) {
        pool_rec *p = r->pool;
        pthread_mutex_lock(&_pool_mu);
        p->live -= r->size;
        p->cached += r->size;
        pthread_mutex_unlock(&_pool_mu);
        r->magic = 0;
        free(r);
        return CUDA_SUCCESS;
    }
    _drop(r);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr d)
{
    return _free(d);
}
EXPORT CUresult cuMemFreeAsync(CUdeviceptr d, CUstream s)
{
    (void)s;
    return _free(d);
}
EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr d, CUstream s)
{
    return cuMemFreeAsync(d, s);
}
EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
    pool_rec *p = _pool_of(pool);
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&_pool_mu);
    int64_t keep_cached = (int64_t)keep > p->live ? (int64_t)keep - p->live : 0;
    int64_t rel = p->cached > keep_cached ? p->cached - keep_cached : 0;
    p->cached -= rel;
    pthread_mutex_unlock(&_pool_mu);
    _live_add(p->dev, -rel);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t size,
                            const CUmemAllocationProp *prop, unsigned long long flags)
{
    (void)flags;
    if (!prop || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr p;
    CUresult r = _alloc(&p, (int64_t)size, K_VMM, prop->location.id);
    if (r == CUDA_SUCCESS) *h = (CUmemGenericAllocationHandle)p;
    return r;
}
EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
    rec *r = _check(h, K_VMM);
    if (!r) return CUDA_ERROR_INVALID_VALUE;
    _drop(r);
    return CUDA_SUCCESS;
}

static int64_t _elem(CUarray_format f, unsigned ch)
{
    int64_t b = f == CU_AD_FORMAT_FLOAT || f == CU_AD_FORMAT_UNSIGNED_INT32  ? 4
                : f == CU_AD_FORMAT_HALF || f == CU_AD_FORMAT_UNSIGNED_INT16 ? 2
                                                                             : 1;
    return b * (ch ? ch : 1);
}

/* Arrays are laid out in 4 KiB-aligned blocks. */
static int64_t _array_bytes(size_t w, size_t h, size_t d, CUarray_format f, unsigned ch)
{
    int64_t b = (int64_t)(w ? w : 1) * (int64_t)(h ? h : 1) * (int64_t)(d ? d : 1) * _elem(f, ch);
    return (b + 4095) / 4096 * 4096;
}

EXPORT CUresult cuArrayCreate_v2(CUarray *a, const CUDA_ARRAY_DESCRIPTOR *d)
{
    CUdeviceptr p;
    CUresult r = _alloc(&p, _array_bytes(d->Width, d->Height, 1, d->Format, d->NumChannels),
                        K_ARRAY, _current());
    if (r == CUDA_SUCCESS) *a = (CUarray)(uintptr_t)p;
    return r;
}
EXPORT CUresult cuArray3DCreate_v2(CUarray *a, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    CUdeviceptr p;
    CUresult r = _alloc(&p, _array_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels),
                        K_ARRAY, _current());
    if (r == CUDA_SUCCESS) *a = (CUarray)(uintptr_t)p;
    return r;
}
EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *a, const CUDA_ARRAY3D_DESCRIPTOR *d,
                                       unsigned levels)
{
    int64_t total = 0;
    size_t w = d->Width, h = d->Height, z = d->Depth;
    for (unsigned l = 0; l < (levels ? levels : 1); l++) {
        total += _array_bytes(w, h, z, d->Format, d->NumChannels);
        w = w > 1 ? w / 2 : 1;
        h = h > 1 ? h / 2 : h;
        z = z > 1 ? z / 2 : z;
    }
    CUdeviceptr p;
    CUresult r = _alloc(&p, total, K_MIPMAP, _current());
    if (r == CUDA_SUCCESS) *a = (CUmipmappedArray)(uintptr_t)p;
    return r;
}
EXPORT CUresult cuArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *req, CUarray a,
                                             CUdevice d)
{
    (void)d;
    rec *r = _check((uint64_t)(uintptr_t)a, K_ARRAY);
    if (!r) return CUDA_ERROR_INVALID_VALUE;
    req->size = (size_t)r->size;
    req->alignment = 4096;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMipmappedArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *req,
                                                      CUmipmappedArray a, CUdevice d)
{
    (void)d;
    rec *r = _check((uint64_t)(uintptr_t)a, K_MIPMAP);
    if (!r) return CUDA_ERROR_INVALID_VALUE;
    req->size = (size_t)r->size;
    req->alignment = 4096;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuArrayDestroy(CUarray a)
{
    rec *r = _check((uint64_t)(uintptr_t)a, K_ARRAY);
    if (!r) return CUDA_ERROR_INVALID_VALUE;
    _drop(r);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray a)
{
    rec *r = _check((uint64_t)(uintptr_t)a, K_MIPMAP);
    if (!r) return CUDA_ERROR_INVALID_VALUE;
    _drop(r);
    return CUDA_SUCCESS;
}

/* ---- simulated execution ------------------------------------------------------------ */
#define QUEUE_LIMIT_NS 50000000LL

static void _sleep_until(int64_t t)
{
    for (int64_t now = fake_now_ns(); now < t; now = fake_now_ns()) {
        int64_t d = t - now;
        struct timespec ts = {d / 1000000000LL, d % 1000000000LL};
        nanosleep(&ts, NULL);
    }
}

/* The host's delay before the first launch of each function (up to 64 of them). */
static void _first_launch_delay(const void *what)
{
    static const void *seen[64];
    static int nseen;
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    const char *us = getenv("FAKE_CUDA_FIRST_LAUNCH_US");
    if (!us || !*us) return;
    pthread_mutex_lock(&mu);
    bool first = true;
    for (int i = 0; i < nseen && first; i++)
        first = seen[i] != what;
    if (first && nseen < 64) seen[nseen++] = what;
    pthread_mutex_unlock(&mu);
    if (first) _sleep_until(fake_now_ns() + strtoll(us, NULL, 10) * 1000);
}

static CUresult _run(const void *what)
{
    int dev = _current();
    if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    _first_launch_delay(what);
    uintptr_t v = (uintptr_t)what;
    int64_t dur = v < 10000000 ? (int64_t)v * 1000 : 10000;
    if (dur == 0) return CUDA_SUCCESS; /* an empty kernel (benchmarks) */
    fake_state *s = fake_state_get();
    int64_t until = atomic_load(&s->busy_until[dev]);
    if (until - fake_now_ns() > QUEUE_LIMIT_NS) _sleep_until(until - QUEUE_LIMIT_NS);
    for (;;) {
        int64_t now = fake_now_ns();
        until = atomic_load(&s->busy_until[dev]);
        int64_t start = until > now ? until : now;
        if (atomic_compare_exchange_weak(&s->busy_until[dev], &until, start + dur)) break;
    }
    atomic_fetch_add(&s->busy_total[dev], dur);
    atomic_fetch_add(&_my_busy, dur);
    return CUDA_SUCCESS;
}

#define KARGS                                                                                      \
    CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,    \
        unsigned shm, CUstream s
#define UNUSED_KARGS (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shm, (void)s

EXPORT CUresult cuLaunchKernel(KARGS, void **params, void **extra)
{
    UNUSED_KARGS, (void)params, (void)extra;
    return _run(f);
}
EXPORT CUresult cuLaunchKernel_ptsz(KARGS, void **params, void **extra)
{
    UNUSED_KARGS, (void)params, (void)extra;
    return _run(f);
}
EXPORT CUresult cuLaunchCooperativeKernel(KARGS, void **params)
{
    UNUSED_KARGS, (void)params;
    return _run(f);
}
EXPORT CUresult cuLaunchCooperativeKernel_ptsz(KARGS, void **params)
{
    UNUSED_KARGS, (void)params;
    return _run(f);
}
EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **p, void **e)
{
    (void)c, (void)p, (void)e;
    return _run(f);
}
EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **p, void **e)
{
    (void)c, (void)p, (void)e;
    return _run(f);
}
EXPORT CUresult cuGraphLaunch(CUgraphExec g, CUstream s)
{
    (void)s;
    return _run(g);
}
EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec g, CUstream s)
{
    (void)s;
    return _run(g);
}

EXPORT CUresult cuEventCreate(CUevent *e, unsigned flags)
{
    (void)flags;
    *e = (CUevent)_rec(K_EVENT, 0, 0);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuEventDestroy_v2(CUevent e)
{
    rec *r = _check((uint64_t)(uintptr_t)e, K_EVENT);
    if (!r) return CUDA_ERROR_INVALID_HANDLE;
    r->magic = 0;
    free(r);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuEventRecord(CUevent e, CUstream s)
{
    (void)s;
    rec *r = _check((uint64_t)(uintptr_t)e, K_EVENT);
    if (!r || _current() < 0) return CUDA_ERROR_INVALID_HANDLE;
    int64_t now = fake_now_ns(), until = atomic_load(&fake_state_get()->busy_until[_current()]);
    r->t = until > now ? until : now;
    r->v = atomic_load(&_my_busy);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuEventQuery(CUevent e)
{
    rec *r = _check((uint64_t)(uintptr_t)e, K_EVENT);
    if (!r) return CUDA_ERROR_INVALID_HANDLE;
    return fake_now_ns() >= r->t ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
EXPORT CUresult cuEventSynchronize(CUevent e)
{
    rec *r = _check((uint64_t)(uintptr_t)e, K_EVENT);
    if (!r) return CUDA_ERROR_INVALID_HANDLE;
    _sleep_until(r->t);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
    rec *x = _check((uint64_t)(uintptr_t)a, K_EVENT), *y = _check((uint64_t)(uintptr_t)b, K_EVENT);
    if (!x || !y || x->t < 0 || y->t < 0) return CUDA_ERROR_INVALID_HANDLE;
    /* By default the GPU time of this process's work between the two records,
     * without host-side gaps; FAKE_CUDA_EVENTS=wall: the stamps' distance. */
    static int wall = -1;
    if (wall < 0) wall = getenv("FAKE_CUDA_EVENTS") && !strcmp(getenv("FAKE_CUDA_EVENTS"), "wall");
    *ms = (float)((double)(wall ? y->t - x->t : y->v - x->v) / 1e6);
    return CUDA_SUCCESS;
}
#undef cuEventElapsedTime
EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b);
EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
    return cuEventElapsedTime_v2(ms, a, b);
}
EXPORT CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st)
{
    (void)s;
    *st = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}
/* Every stream is the device's one timeline: idle once its work is done. */
EXPORT CUresult cuStreamQuery(CUstream s)
{
    (void)s;
    int dev = _current();
    if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    return atomic_load(&fake_state_get()->busy_until[dev]) <= fake_now_ns() ? CUDA_SUCCESS
                                                                            : CUDA_ERROR_NOT_READY;
}
EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *m)
{
    (void)m;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxSynchronize(void)
{
    int dev = _current();
    if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    _sleep_until(atomic_load(&fake_state_get()->busy_until[dev]));
    return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamSynchronize(CUstream s)
{
    (void)s;
    return cuCtxSynchronize();
}

/* ---- cuGetProcAddress: a static table, as the real driver has ------------------------ */
typedef struct {
    const char *base;
    int version; /* lowest cudaVersion this entry serves */
    int ptds;
    void *fn;
} entry_t;

static const entry_t _table[] = {
    {"cuInit", 2000, 0, (void *)cuInit},
    {"cuDeviceGetCount", 2000, 0, (void *)cuDeviceGetCount},
    {"cuCtxGetDevice", 2000, 0, (void *)cuCtxGetDevice},
    {"cuMemAlloc", 3020, 0, (void *)cuMemAlloc_v2},
    {"cuMemAllocPitch", 3020, 0, (void *)cuMemAllocPitch_v2},
    {"cuMemAllocManaged", 6000, 0, (void *)cuMemAllocManaged},
    {"cuMemAllocAsync", 11020, 0, (void *)cuMemAllocAsync},
    {"cuMemAllocAsync", 11020, 1, (void *)cuMemAllocAsync_ptsz},
    {"cuMemAllocFromPoolAsync", 11020, 0, (void *)cuMemAllocFromPoolAsync},
    {"cuMemAllocFromPoolAsync", 11020, 1, (void *)cuMemAllocFromPoolAsync_ptsz},
    {"cuMemFree", 3020, 0, (void *)cuMemFree_v2},
    {"cuMemFreeAsync", 11020, 0, (void *)cuMemFreeAsync},
    {"cuMemFreeAsync", 11020, 1, (void *)cuMemFreeAsync_ptsz},
    {"cuMemCreate", 10020, 0, (void *)cuMemCreate},
    {"cuMemRelease", 10020, 0, (void *)cuMemRelease},
    {"cuMemGetInfo", 3020, 0, (void *)cuMemGetInfo_v2},
    {"cuDeviceTotalMem", 3020, 0, (void *)cuDeviceTotalMem_v2},
    {"cuArrayCreate", 3020, 0, (void *)cuArrayCreate_v2},
    {"cuLaunchKernel", 4000, 0, (void *)cuLaunchKernel},
    {"cuLaunchKernel", 7000, 1, (void *)cuLaunchKernel_ptsz},
    {"cuGraphLaunch", 10000, 0, (void *)cuGraphLaunch},
    {"cuGraphLaunch", 10000, 1, (void *)cuGraphLaunch_ptsz},
    {"cuGetProcAddress", 11030, 0, (void *)cuGetProcAddress},
    {"cuGetProcAddress", 12000, 0, (void *)cuGetProcAddress_v2},
};

EXPORT CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *st)
{
    int ptds = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    const entry_t *best = NULL;
    bool found = false;
    for (size_t i = 0; i < sizeof(_table) / sizeof(_table[0]); i++) {
        const entry_t *e = &_table[i];
        if (strcmp(e->base, sym)) continue;
        found = true;
        if (e->version > ver) continue;
        if (e->ptds == ptds || (!e->ptds && !best))
            if (!best || e->ptds == ptds) best = e;
    }
    if (st)
        *st = best    ? CU_GET_PROC_ADDRESS_SUCCESS
              : found ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                      : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    *pfn = best ? best->fn : NULL;
    return best ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuGetProcAddress(const char *sym, void **pfn, int ver, cuuint64_t flags)
{
    return cuGetProcAddress_v2(sym, pfn, ver, flags, NULL);
}
