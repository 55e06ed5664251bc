/* procaddr.c: cuGetProcAddress (CUDA 11.3) and cuGetProcAddress_v2 (CUDA 12).
 *
 * Frameworks (libcudart among them) fetch every driver entry point through
 * cuGetProcAddress by base name ("cuMemAlloc"), the CUDA version they were built
 * for and a stream flag. We let the real driver answer first (so symbolStatus,
 * versions it does not know, and symbols we do not hook behave exactly as without
 * the shim); if it found the symbol and we hook the variant that name, version
 * and flags select, we hand back our wrapper instead. The variant is chosen the
 * way the driver does: the highest version not above cudaVersion, the _ptsz/_ptds
 * variant when CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM is set. */
#include "services/cuda-shim/hooks.h"

#include <string.h>

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
