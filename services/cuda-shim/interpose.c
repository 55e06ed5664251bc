/* interpose.c: cuGetProcAddress and dlsym hand out the hooks (interpose.h). */
#include "services/cuda-shim/interpose.h"

#include <dlfcn.h>
#include <string.h>

#include "services/cuda-shim/driver.h"
#include "services/cuda-shim/hooks.h"
#include "services/cuda-shim/init.h"

#define TSHIM_ADDR_HOOK(s, p, b, v, t) (void *)&s,
#define TSHIM_NULL_USED(s, p) NULL,
#define TSHIM_ADDR_NVML(s) (void *)&s,
#define TSHIM_NULL_NVML(s) NULL,
void *const tshim_wrapper[TSHIM_SYM_COUNT] = {
    TSHIM_CU_HOOKS(TSHIM_ADDR_HOOK) NULL, TSHIM_CU_USED(TSHIM_NULL_USED) NULL,
    TSHIM_NVML_HOOKS(TSHIM_ADDR_NVML) NULL, TSHIM_NVML_USED(TSHIM_NULL_NVML)};

/* ---- cuGetProcAddress ---------------------------------------------------------- */

typedef struct {
    const char *base;
    int version;
    int ptds;
} variant_t;

#define TSHIM_VARIANT(s, p, b, v, t) {b, v, t},
static const variant_t _variants[TSHIM_SYM_CU_HOOK_END] = {TSHIM_CU_HOOKS(TSHIM_VARIANT)};

void *tshim_procaddr_wrapper(const char *symbol, int cuda_version, cuuint64_t flags)
{
    int want_ptds = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    int best = -1, best_any_stream = -1;
    bool has_ptds = false;
    for (int i = 0; i < TSHIM_SYM_CU_HOOK_END; i++) {
        const variant_t *v = &_variants[i];
        if (strcmp(v->base, symbol) != 0) continue;
        if (v->ptds) has_ptds = true;
        if (v->version > cuda_version) continue;
        if (v->ptds == want_ptds && (best < 0 || v->version > _variants[best].version)) best = i;
        if (!v->ptds && (best_any_stream < 0 || v->version > _variants[best_any_stream].version))
            best_any_stream = i;
    }
    /* A function without a per-thread variant serves both stream modes. */
    if (best < 0 && want_ptds && !has_ptds) best = best_any_stream;
    /* A legacy variant we do not hook (e.g. the 32-bit cuMemAlloc of CUDA 2.0) is
     * newer in our table than what was asked for: leave the driver's answer. */
    return best >= 0 ? tshim_wrapper[best] : NULL;
}

static CUresult _get_proc(const char *symbol, void **pfn, int cuda_version, cuuint64_t flags,
                          CUdriverProcAddressQueryResult *status)
{
    tshim_init();
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r;
    if (REAL(cuGetProcAddress_v2))
        r = REAL(cuGetProcAddress_v2)(symbol, pfn, cuda_version, flags, &st);
    else if (REAL(cuGetProcAddress)) {
        r = REAL(cuGetProcAddress)(symbol, pfn, cuda_version, flags);
        st = r == CUDA_SUCCESS ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    } else
        return CUDA_ERROR_NOT_INITIALIZED;
    if (status) *status = st;
    if (r == CUDA_SUCCESS && symbol && pfn && *pfn && st == CU_GET_PROC_ADDRESS_SUCCESS) {
        void *w = tshim_procaddr_wrapper(symbol, cuda_version, flags);
        if (w) *pfn = w;
    }
    return r;
}

TSHIM_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                          cuuint64_t flags,
                                          CUdriverProcAddressQueryResult *symbolStatus)
{
    return _get_proc(symbol, pfn, cudaVersion, flags, symbolStatus);
}

TSHIM_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                       cuuint64_t flags)
{
    return _get_proc(symbol, pfn, cudaVersion, flags, NULL);
}

/* ---- dlsym ------------------------------------------------------------------------- */

/* Slow path of dlsym for a hooked name; returns the answer. */
__attribute__((noinline)) static void *_dlsym_hooked(tshim_dlsym_fn real, void *handle,
                                                     const char *name, int idx)
{
    void *r = real(handle, name);
    if (!r || r == tshim_wrapper[idx] || tshim_in_init()) return r;
    bool nvml = idx > TSHIM_SYM_CU_END;
    if (nvml)
        tshim_nvml_init();
    else
        tshim_init();
    if (r == tshim_real[idx] || tshim_driver_owns(r, nvml)) return tshim_wrapper[idx];
    return r; /* some other library's symbol of that name */
}

TSHIM_EXPORT void *dlsym(void *handle, const char *name)
{
    tshim_dlsym_fn real = tshim_driver_dlsym();
    if (TSHIM_UNLIKELY(!real)) return NULL;
    if (((name[0] == 'c' && name[1] == 'u') || (name[0] == 'n' && name[1] == 'v'))) {
        int idx = tshim_hook_index(name);
        if (idx >= 0) return _dlsym_hooked(real, handle, name, idx);
    }
    return real(handle, name); /* a sibling call: glibc sees our caller */
}
