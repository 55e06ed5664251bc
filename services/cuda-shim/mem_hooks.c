/* mem_hooks.c: every device-memory allocation path, held to the container's cap.
 *
 * Pattern for each allocation: reserve the bytes in the shared region (check and
 * add under its lock), call the driver, roll the reservation back if the driver
 * fails, remember the allocation in the per-process map. Over the cap the hook
 * returns CUDA_ERROR_OUT_OF_MEMORY without calling the driver. Frees take the
 * entry out of the map first (so a concurrent allocation that gets the same
 * address cannot be confused with it), call the driver, and return the bytes or
 * put the entry back if the driver refused. Unknown pointers pass through.
 *
 * Where the driver decides the size (cuMemAllocPitch's pitch, the layout of CUDA
 * arrays) the hook reserves an upper estimate first and settles to the driver's
 * figure afterwards; if the settled size no longer fits, the allocation is freed
 * and the hook returns CUDA_ERROR_OUT_OF_MEMORY.
 *
 * Stream-ordered pools: memory freed with cuMemFreeAsync stays in the driver's pool
 * and is still physically held, so the shim keeps charging it ("cached") and lets
 * later allocations from the same pool reuse the charge. cuMemPoolTrimTo returns
 * what the driver may have released: cached bytes beyond max(0, keep - live).
 * When an allocation would fail, the shim first trims this process's own pools on
 * that device to zero and returns their cached bytes, then retries once. */
#include "services/cuda-shim/allocmap.h"
#include "services/cuda-shim/hooks.h"
#include "services/cuda-shim/region.h"

#include <pthread.h>
#include <string.h>

#define NEED(s)                                                                                    \
    do {                                                                                           \
        if (TSHIM_UNLIKELY(!REAL(s))) return CUDA_ERROR_NOT_INITIALIZED;                           \
    } while (0)

static inline bool _capped(void)
{
    return tshim_cfg.any_mem_limit;
}

static inline uint64_t _limit(int dev)
{
    return dev >= 0 && dev < TSHIM_MAX_DEVICES ? tshim_cfg.mem_limit[dev] : 0;
}

/* ---- pools -------------------------------------------------------------------- */
#define MAX_POOLS 64
typedef struct {
    void *pool;
    int dev;
    bool used;
    uint64_t live, cached;
} pool_ent;
static pool_ent _pools[MAX_POOLS];
static pthread_mutex_t _pool_mu = PTHREAD_MUTEX_INITIALIZER;

/* Under _pool_mu. NULL when the table is full (then frees release at once). */
static pool_ent *_pool_get(void *pool, int dev, bool add)
{
    pool_ent *free_slot = NULL;
    for (int i = 0; i < MAX_POOLS; i++) {
        if (_pools[i].used && _pools[i].pool == pool && _pools[i].dev == dev) return &_pools[i];
        if (!_pools[i].used && !free_slot) free_slot = &_pools[i];
    }
    if (!add || !free_slot) return NULL;
    *free_slot = (pool_ent){.pool = pool, .dev = dev, .used = true};
    return free_slot;
}

/* Trim this process's pools on dev to zero; returns the bytes given back. */
static uint64_t _trim_own_pools(int dev)
{
    void *todo[MAX_POOLS];
    int n = 0;
    pthread_mutex_lock(&_pool_mu);
    for (int i = 0; i < MAX_POOLS; i++)
        if (_pools[i].used && _pools[i].dev == dev && _pools[i].cached) todo[n++] = _pools[i].pool;
    pthread_mutex_unlock(&_pool_mu);
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        if (!REAL(cuMemPoolTrimTo) ||
            REAL(cuMemPoolTrimTo)((CUmemoryPool)todo[i], 0) != CUDA_SUCCESS)
            continue;
        pthread_mutex_lock(&_pool_mu);
        pool_ent *e = _pool_get(todo[i], dev, false);
        uint64_t rel = e ? e->cached : 0;
        if (e) e->cached = 0;
        pthread_mutex_unlock(&_pool_mu);
        tshim_region_release(dev, rel);
        total += rel;
    }
    return total;
}

/* Reserve with one retry after returning our own pools' cached memory. */
static bool _reserve(int dev, uint64_t bytes)
{
    if (tshim_region_reserve(dev, bytes, _limit(dev))) return true;
    if (_trim_own_pools(dev) == 0) return false;
    return tshim_region_reserve(dev, bytes, _limit(dev));
}

static void _track(uint8_t kind, uint64_t key, uint64_t bytes, int dev, void *pool, bool from_pool)
{
    tshim_alloc a = {.key = key,
                     .bytes = bytes,
                     .pool = pool,
                     .dev = (int16_t)dev,
                     .kind = kind,
                     .from_pool = from_pool};
    if (!tshim_map_put(&a))
        TSHIM_LOG("allocation map full", "bytes=%llu", (unsigned long long)bytes);
}

/* Return what a freed allocation was charged: to its pool's cache or to the region. */
static void _uncharge(const tshim_alloc *a)
{
    if (a->from_pool) {
        pthread_mutex_lock(&_pool_mu);
        pool_ent *e = _pool_get(a->pool, a->dev, false);
        if (e) {
            e->live -= a->bytes < e->live ? a->bytes : e->live;
            e->cached += a->bytes;
        }
        pthread_mutex_unlock(&_pool_mu);
        if (e) return;
    }
    tshim_region_release(a->dev, a->bytes);
}

/* Settle a reservation of `reserved` to the driver's `actual`. False if the extra
 * does not fit (the caller frees the object and reports out of memory). */
static bool _settle(int dev, uint64_t reserved, uint64_t actual)
{
    if (actual > reserved) return _reserve(dev, actual - reserved);
    tshim_region_release(dev, reserved - actual);
    return true;
}

/* ---- plain allocations -------------------------------------------------------- */
static CUresult _alloc_plain(CUdeviceptr *dptr, size_t bytes, CUresult (*call)(void *), void *ctx)
{
    int dev;
    bool have_dev = tshim_current_device(&dev);
    if (have_dev && !_reserve(dev, bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = call(ctx);
    if (r != CUDA_SUCCESS) {
        if (have_dev) tshim_region_release(dev, bytes);
        return r;
    }
    if (!have_dev) { /* the driver found a context we could not see: charge anyway */
        dev = 0;
        tshim_region_force(dev, bytes);
    }
    _track(TSHIM_KIND_MEM, *dptr, bytes, dev, NULL, false);
    return r;
}

typedef struct {
    CUdeviceptr *dptr;
    size_t bytes;
    unsigned flags;
} plain_args;

static CUresult _call_alloc(void *p)
{
    plain_args *a = p;
    return REAL(cuMemAlloc_v2)(a->dptr, a->bytes);
}

static CUresult _call_managed(void *p)
{
    plain_args *a = p;
    return REAL(cuMemAllocManaged)(a->dptr, a->bytes, a->flags);
}

TSHIM_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    tshim_init();
    NEED(cuMemAlloc_v2);
    if (!_capped()) return REAL(cuMemAlloc_v2)(dptr, bytesize);
    plain_args a = {dptr, bytesize, 0};
    return _alloc_plain(dptr, bytesize, _call_alloc, &a);
}

TSHIM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    tshim_init();
    NEED(cuMemAllocManaged);
    if (!_capped()) return REAL(cuMemAllocManaged)(dptr, bytesize, flags);
    plain_args a = {dptr, bytesize, flags};
    return _alloc_plain(dptr, bytesize, _call_managed, &a);
}

/* The driver aligns each row; 512 bytes is the largest pitch alignment CUDA devices
 * use, so this bound is reserved first and settled to pitch * height. */
#define PITCH_ALIGN_BOUND 512u

TSHIM_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                         size_t Height, unsigned int ElementSizeBytes)
{
    tshim_init();
    NEED(cuMemAllocPitch_v2);
    if (!_capped())
        return REAL(cuMemAllocPitch_v2)(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    uint64_t row =
        ((uint64_t)WidthInBytes + PITCH_ALIGN_BOUND - 1) & ~(uint64_t)(PITCH_ALIGN_BOUND - 1);
    uint64_t est;
    if (__builtin_mul_overflow(row, (uint64_t)Height, &est))
        return REAL(cuMemAllocPitch_v2)(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    int dev;
    if (!tshim_current_device(&dev)) dev = 0;
    if (!_reserve(dev, est)) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = REAL(cuMemAllocPitch_v2)(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    if (r != CUDA_SUCCESS) {
        tshim_region_release(dev, est);
        return r;
    }
    uint64_t actual = (uint64_t)*pPitch * Height;
    if (!_settle(dev, est, actual)) {
        REAL(cuMemFree_v2)(*dptr);
        tshim_region_release(dev, est);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    _track(TSHIM_KIND_MEM, *dptr, actual, dev, NULL, false);
    return r;
}

static CUresult _free(CUdeviceptr dptr, CUresult (*call)(CUdeviceptr, CUstream), CUstream s,
                      bool async)
{
    tshim_alloc a;
    bool known = _capped() && dptr && tshim_map_take(TSHIM_KIND_MEM, dptr, &a);
    CUresult r = async ? call(dptr, s) : REAL(cuMemFree_v2)(dptr);
    if (!known) return r;
    if (r != CUDA_SUCCESS) {
        if (!tshim_map_put(&a)) TSHIM_LOG("allocation map full", "op=free");
        return r;
    }
    _uncharge(&a);
    return r;
}

TSHIM_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    tshim_init();
    NEED(cuMemFree_v2);
    return _free(dptr, NULL, NULL, false);
}

/* ---- stream-ordered allocations ------------------------------------------------ */
typedef CUresult (*alloc_async_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*alloc_pool_fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);

static CUresult _alloc_async(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream s,
                             alloc_async_fn fa, alloc_pool_fn fp)
{
    int dev;
    if (!tshim_current_device(&dev)) dev = 0;
    void *key = pool;
    if (!fp) { /* cuMemAllocAsync: the device's current pool */
        CUmemoryPool cur = NULL;
        if (REAL(cuDeviceGetMemPool) && REAL(cuDeviceGetMemPool)(&cur, dev) == CUDA_SUCCESS)
            key = cur;
    }
    pthread_mutex_lock(&_pool_mu);
    pool_ent *e = _pool_get(key, dev, true);
    uint64_t take = e ? (e->cached < bytes ? e->cached : bytes) : 0;
    if (e) e->cached -= take;
    pthread_mutex_unlock(&_pool_mu);
    uint64_t need = bytes - take;
    if (need && !tshim_region_reserve(dev, need, _limit(dev))) {
        /* Give the cache back, trim our pools, and try again for the full size. */
        pthread_mutex_lock(&_pool_mu);
        if (e) e->cached += take;
        pthread_mutex_unlock(&_pool_mu);
        take = 0;
        need = bytes;
        if (_trim_own_pools(dev) == 0 || !tshim_region_reserve(dev, need, _limit(dev)))
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CUresult r = fp ? fp(dptr, bytes, pool, s) : fa(dptr, bytes, s);
    pthread_mutex_lock(&_pool_mu);
    if (e) {
        if (r == CUDA_SUCCESS)
            e->live += bytes;
        else
            e->cached += take;
    }
    pthread_mutex_unlock(&_pool_mu);
    if (r != CUDA_SUCCESS) {
        tshim_region_release(dev, need);
        return r;
    }
    _track(TSHIM_KIND_MEM, *dptr, bytes, dev, key, e != NULL);
    return r;
}

TSHIM_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    tshim_init();
    NEED(cuMemAllocAsync);
    if (!_capped()) return REAL(cuMemAllocAsync)(dptr, bytesize, hStream);
    return _alloc_async(dptr, bytesize, NULL, hStream, REAL(cuMemAllocAsync), NULL);
}

TSHIM_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    tshim_init();
    NEED(cuMemAllocAsync_ptsz);
    if (!_capped()) return REAL(cuMemAllocAsync_ptsz)(dptr, bytesize, hStream);
    return _alloc_async(dptr, bytesize, NULL, hStream, REAL(cuMemAllocAsync_ptsz), NULL);
}

TSHIM_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                              CUstream hStream)
{
    tshim_init();
    NEED(cuMemAllocFromPoolAsync);
    if (!_capped()) return REAL(cuMemAllocFromPoolAsync)(dptr, bytesize, pool, hStream);
    return _alloc_async(dptr, bytesize, pool, hStream, NULL, REAL(cuMemAllocFromPoolAsync));
}

TSHIM_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                   CUmemoryPool pool, CUstream hStream)
{
    tshim_init();
    NEED(cuMemAllocFromPoolAsync_ptsz);
    if (!_capped()) return REAL(cuMemAllocFromPoolAsync_ptsz)(dptr, bytesize, pool, hStream);
    return _alloc_async(dptr, bytesize, pool, hStream, NULL, REAL(cuMemAllocFromPoolAsync_ptsz));
}

TSHIM_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    tshim_init();
    NEED(cuMemFreeAsync);
    return _free(dptr, REAL(cuMemFreeAsync), hStream, true);
}

TSHIM_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    tshim_init();
    NEED(cuMemFreeAsync_ptsz);
    return _free(dptr, REAL(cuMemFreeAsync_ptsz), hStream, true);
}

TSHIM_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    tshim_init();
    NEED(cuMemPoolTrimTo);
    CUresult r = REAL(cuMemPoolTrimTo)(pool, minBytesToKeep);
    if (r != CUDA_SUCCESS || !_capped()) return r;
    int devs[MAX_POOLS];
    uint64_t rel[MAX_POOLS];
    int n = 0;
    pthread_mutex_lock(&_pool_mu);
    for (int i = 0; i < MAX_POOLS; i++) {
        pool_ent *e = &_pools[i];
        if (!e->used || e->pool != (void *)pool) continue;
        uint64_t keep_cached = minBytesToKeep > e->live ? minBytesToKeep - e->live : 0;
        if (e->cached > keep_cached) {
            devs[n] = e->dev;
            rel[n++] = e->cached - keep_cached;
            e->cached = keep_cached;
        }
    }
    pthread_mutex_unlock(&_pool_mu);
    for (int i = 0; i < n; i++)
        tshim_region_release(devs[i], rel[i]);
    return r;
}

/* ---- virtual memory management -------------------------------------------------- */
TSHIM_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                  const CUmemAllocationProp *prop, unsigned long long flags)
{
    tshim_init();
    NEED(cuMemCreate);
    /* The device is in the properties: no current context is needed. */
    if (!_capped() || !prop || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return REAL(cuMemCreate)(handle, size, prop, flags);
    int dev = prop->location.id;
    if (!_reserve(dev, size)) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = REAL(cuMemCreate)(handle, size, prop, flags);
    if (r != CUDA_SUCCESS) {
        tshim_region_release(dev, size);
        return r;
    }
    _track(TSHIM_KIND_VMM, *handle, size, dev, NULL, false);
    return r;
}

TSHIM_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    tshim_init();
    NEED(cuMemRelease);
    tshim_alloc a;
    bool known = _capped() && tshim_map_take(TSHIM_KIND_VMM, handle, &a);
    CUresult r = REAL(cuMemRelease)(handle);
    if (known) {
        if (r == CUDA_SUCCESS)
            _uncharge(&a);
        else if (!tshim_map_put(&a))
            TSHIM_LOG("allocation map full", "op=release");
    }
    return r;
}

/* ---- CUDA arrays -------------------------------------------------------------- */
static uint64_t _format_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 16; /* unknown or packed formats: an upper bound */
    }
}

static uint64_t _extent_bytes(size_t w, size_t h, size_t d, CUarray_format f, unsigned ch)
{
    uint64_t b = (uint64_t)(w ? w : 1) * (h ? h : 1);
    uint64_t b2, b3;
    if (__builtin_mul_overflow(b, (uint64_t)(d ? d : 1), &b2)) return UINT64_MAX;
    if (__builtin_mul_overflow(b2, _format_bytes(f) * (ch ? ch : 1), &b3)) return UINT64_MAX;
    return b3;
}

/* Create an array-like object: reserve est, create, settle to the driver's memory
 * requirement where it reports one. */
static CUresult _array_create(uint8_t kind, uint64_t est, void **handle_out,
                              CUresult (*create)(void *), void *args)
{
    int dev;
    if (!tshim_current_device(&dev)) dev = 0;
    if (est == UINT64_MAX) return CUDA_ERROR_OUT_OF_MEMORY;
    if (!_reserve(dev, est)) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = create(args);
    if (r != CUDA_SUCCESS) {
        tshim_region_release(dev, est);
        return r;
    }
    uint64_t actual = est;
    CUDA_ARRAY_MEMORY_REQUIREMENTS req;
    memset(&req, 0, sizeof(req));
    CUresult q = CUDA_ERROR_NOT_SUPPORTED;
    if (kind == TSHIM_KIND_ARRAY && REAL(cuArrayGetMemoryRequirements))
        q = REAL(cuArrayGetMemoryRequirements)(&req, (CUarray)*handle_out, dev);
    else if (kind == TSHIM_KIND_MIPMAP && REAL(cuMipmappedArrayGetMemoryRequirements))
        q = REAL(cuMipmappedArrayGetMemoryRequirements)(&req, (CUmipmappedArray)*handle_out, dev);
    if (q == CUDA_SUCCESS && req.size) actual = req.size;
    if (!_settle(dev, est, actual)) {
        if (kind == TSHIM_KIND_ARRAY)
            REAL(cuArrayDestroy)((CUarray)*handle_out);
        else
            REAL(cuMipmappedArrayDestroy)((CUmipmappedArray)*handle_out);
        tshim_region_release(dev, est);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    _track(kind, (uint64_t)(uintptr_t)*handle_out, actual, dev, NULL, false);
    return r;
}

typedef struct {
    CUarray *h;
    const CUDA_ARRAY_DESCRIPTOR *d2;
    const CUDA_ARRAY3D_DESCRIPTOR *d3;
    CUmipmappedArray *mh;
    unsigned levels;
} array_args;

static CUresult _call_array2d(void *p)
{
    array_args *a = p;
    return REAL(cuArrayCreate_v2)(a->h, a->d2);
}
static CUresult _call_array3d(void *p)
{
    array_args *a = p;
    return REAL(cuArray3DCreate_v2)(a->h, a->d3);
}
static CUresult _call_mipmap(void *p)
{
    array_args *a = p;
    return REAL(cuMipmappedArrayCreate)(a->mh, a->d3, a->levels);
}

TSHIM_EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle,
                                       const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    tshim_init();
    NEED(cuArrayCreate_v2);
    if (!_capped() || !pHandle || !pAllocateArray)
        return REAL(cuArrayCreate_v2)(pHandle, pAllocateArray);
    const CUDA_ARRAY_DESCRIPTOR *d = pAllocateArray;
    array_args a = {.h = pHandle, .d2 = d};
    return _array_create(TSHIM_KIND_ARRAY,
                         _extent_bytes(d->Width, d->Height, 1, d->Format, d->NumChannels),
                         (void **)pHandle, _call_array2d, &a);
}

/* Sparse and deferred-mapping arrays own no memory: theirs comes from cuMemCreate. */
#define ARRAY_NO_BACKING (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING)

TSHIM_EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle,
                                         const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    tshim_init();
    NEED(cuArray3DCreate_v2);
    const CUDA_ARRAY3D_DESCRIPTOR *d = pAllocateArray;
    if (!_capped() || !pHandle || !d || (d->Flags & ARRAY_NO_BACKING))
        return REAL(cuArray3DCreate_v2)(pHandle, d);
    array_args a = {.h = pHandle, .d3 = d};
    return _array_create(TSHIM_KIND_ARRAY,
                         _extent_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels),
                         (void **)pHandle, _call_array3d, &a);
}

TSHIM_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                             const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                             unsigned int numMipmapLevels)
{
    tshim_init();
    NEED(cuMipmappedArrayCreate);
    const CUDA_ARRAY3D_DESCRIPTOR *d = pMipmappedArrayDesc;
    if (!_capped() || !pHandle || !d || (d->Flags & ARRAY_NO_BACKING))
        return REAL(cuMipmappedArrayCreate)(pHandle, d, numMipmapLevels);
    uint64_t est = 0;
    size_t w = d->Width, h = d->Height, z = d->Depth;
    for (unsigned l = 0; l < (numMipmapLevels ? numMipmapLevels : 1); l++) {
        uint64_t lv = _extent_bytes(w, h, z, d->Format, d->NumChannels);
        if (lv == UINT64_MAX || __builtin_add_overflow(est, lv, &est)) {
            est = UINT64_MAX;
            break;
        }
        w = w > 1 ? w / 2 : 1;
        h = h > 1 ? h / 2 : h;
        /* layered arrays keep their layer count */
        z = (d->Flags & CUDA_ARRAY3D_LAYERED) ? z : (z > 1 ? z / 2 : z);
    }
    array_args a = {.mh = pHandle, .d3 = d, .levels = numMipmapLevels};
    return _array_create(TSHIM_KIND_MIPMAP, est, (void **)pHandle, _call_mipmap, &a);
}

static CUresult _destroy(uint8_t kind, uint64_t key, CUresult r_of_call(void *), void *h)
{
    tshim_alloc a;
    bool known = _capped() && tshim_map_take(kind, key, &a);
    CUresult r = r_of_call(h);
    if (known) {
        if (r == CUDA_SUCCESS)
            _uncharge(&a);
        else if (!tshim_map_put(&a))
            TSHIM_LOG("allocation map full", "op=destroy");
    }
    return r;
}

static CUresult _call_array_destroy(void *h)
{
    return REAL(cuArrayDestroy)((CUarray)h);
}
static CUresult _call_mipmap_destroy(void *h)
{
    return REAL(cuMipmappedArrayDestroy)((CUmipmappedArray)h);
}

TSHIM_EXPORT CUresult cuArrayDestroy(CUarray hArray)
{
    tshim_init();
    NEED(cuArrayDestroy);
    return _destroy(TSHIM_KIND_ARRAY, (uint64_t)(uintptr_t)hArray, _call_array_destroy, hArray);
}

TSHIM_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    tshim_init();
    NEED(cuMipmappedArrayDestroy);
    return _destroy(TSHIM_KIND_MIPMAP, (uint64_t)(uintptr_t)hMipmappedArray, _call_mipmap_destroy,
                    hMipmappedArray);
}
