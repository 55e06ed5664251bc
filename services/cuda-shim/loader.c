/* loader.c: lazy loading of the real libcuda.so.1 / libnvidia-ml.so.1, the symbol
 * tables, and the dlsym interposer.
 *
 * Nothing happens at load time. The first hooked call runs tshim_init_slow: read
 * the config, dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL) (which returns the
 * already loaded copy when the application linked it), resolve the real entry
 * points with the real dlsym on that handle, attach the accounting region.
 *
 * Why dlsym is interposed: symbol preemption by LD_PRELOAD covers callers that
 * link libcuda, and dlsym(RTLD_DEFAULT, ...). It does not cover
 * dlsym(handle_of_libcuda, "cuMemAlloc_v2"), which searches only libcuda's own
 * scope; that is how libcudart finds cuGetProcAddress. Our dlsym forwards every
 * name that is not a hooked cu* / nvml* symbol with a tail call to glibc's dlsym
 * (compiled as a jump, so glibc still sees the original caller and RTLD_NEXT keeps
 * its meaning). For a hooked name it asks glibc, and if the answer is the real
 * driver's function it returns our wrapper instead. */
#include "services/cuda-shim/hooks.h"
#include "services/cuda-shim/limiter.h"
#include "services/cuda-shim/region.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

void *tshim_real[TSHIM_SYM_COUNT];

#define TSHIM_NAME_HOOK(s, p, b, v, t) #s,
#define TSHIM_NAME_USED(s, p) #s,
#define TSHIM_NAME_NVML(s) #s,
const char *const tshim_sym_name[TSHIM_SYM_COUNT] = {
    TSHIM_CU_HOOKS(TSHIM_NAME_HOOK) "", TSHIM_CU_USED(TSHIM_NAME_USED) "",
    TSHIM_NVML_HOOKS(TSHIM_NAME_NVML) "", TSHIM_NVML_USED(TSHIM_NAME_NVML)};

#define TSHIM_ADDR_HOOK(s, p, b, v, t) (void *)&s,
#define TSHIM_NULL_USED(s, p) NULL,
#define TSHIM_ADDR_NVML(s) (void *)&s,
#define TSHIM_NULL_NVML(s) NULL,
void *const tshim_wrapper[TSHIM_SYM_COUNT] = {
    TSHIM_CU_HOOKS(TSHIM_ADDR_HOOK) NULL, TSHIM_CU_USED(TSHIM_NULL_USED) NULL,
    TSHIM_NVML_HOOKS(TSHIM_ADDR_NVML) NULL, TSHIM_NVML_USED(TSHIM_NULL_NVML)};

atomic_bool tshim_inited;
atomic_int tshim_device_count;

typedef void *(*dlsym_fn)(void *, const char *);
static dlsym_fn _real_dlsym;
static void *_cuda_handle, *_nvml_handle;
static atomic_bool _nvml_inited;
static pthread_mutex_t _init_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t _nvml_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t _config_once = PTHREAD_ONCE_INIT;
static __thread bool _in_init; /* libcuda's own start-up may call back into us */

static dlsym_fn _resolve_real_dlsym(void)
{
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.0"};
    dlsym_fn f = NULL;
    for (size_t i = 0; !f && i < sizeof(versions) / sizeof(versions[0]); i++)
        f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    __atomic_store_n(&_real_dlsym, f, __ATOMIC_RELEASE);
    return f;
}

static inline dlsym_fn _get_real_dlsym(void)
{
    dlsym_fn f = __atomic_load_n(&_real_dlsym, __ATOMIC_ACQUIRE);
    return f ? f : _resolve_real_dlsym();
}

static void _load_config(void)
{
    tshim_config_load();
}

void tshim_init_slow(void)
{
    if (_in_init) return; /* re-entered from libcuda's start-up: not ready yet */
    pthread_mutex_lock(&_init_mu);
    if (!atomic_load(&tshim_inited)) {
        _in_init = true;
        pthread_once(&_config_once, _load_config);
        dlsym_fn real_dlsym = _get_real_dlsym();
        _cuda_handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (_cuda_handle && real_dlsym) {
            for (int i = 0; i < TSHIM_SYM_CU_END; i++) {
                if (!tshim_sym_name[i][0]) continue;
                tshim_real[i] = real_dlsym(_cuda_handle, tshim_sym_name[i]);
                if (!tshim_real[i] && i > TSHIM_SYM_CU_HOOK_END) { /* e.g. only a _v2 left */
                    char v2[96];
                    snprintf(v2, sizeof(v2), "%s_v2", tshim_sym_name[i]);
                    tshim_real[i] = real_dlsym(_cuda_handle, v2);
                }
            }
        } else {
            TSHIM_LOG("libcuda.so.1 not loadable", "error=\"%s\"", dlerror());
        }
        if ((tshim_cfg.any_mem_limit || tshim_cfg.compute_share < 1.0) && !tshim_region_attach())
            TSHIM_LOG("no accounting region", "effect=fail_closed");
        tshim_limiter_init();
        _in_init = false;
        atomic_store_explicit(&tshim_inited, true, memory_order_release);
    }
    pthread_mutex_unlock(&_init_mu);
}

void tshim_nvml_init(void)
{
    if (atomic_load_explicit(&_nvml_inited, memory_order_acquire) || _in_init) return;
    pthread_mutex_lock(&_nvml_mu);
    if (!atomic_load(&_nvml_inited)) {
        _in_init = true;
        pthread_once(&_config_once, _load_config);
        dlsym_fn real_dlsym = _get_real_dlsym();
        _nvml_handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (_nvml_handle && real_dlsym)
            for (int i = TSHIM_SYM_CU_END + 1; i < TSHIM_SYM_COUNT; i++)
                if (tshim_sym_name[i][0])
                    tshim_real[i] = real_dlsym(_nvml_handle, tshim_sym_name[i]);
        if (tshim_cfg.any_mem_limit && !tshim_region_attach())
            TSHIM_LOG("no accounting region", "effect=fail_closed");
        _in_init = false;
        atomic_store_explicit(&_nvml_inited, true, memory_order_release);
    }
    pthread_mutex_unlock(&_nvml_mu);
}

bool tshim_current_device(int *dev)
{
    int n = atomic_load_explicit(&tshim_device_count, memory_order_relaxed);
    if (TSHIM_UNLIKELY(n == 0)) {
        int c = 0;
        if (REAL(cuDeviceGetCount) && REAL(cuDeviceGetCount)(&c) == CUDA_SUCCESS && c > 0) {
            atomic_store_explicit(&tshim_device_count, c, memory_order_relaxed);
            n = c;
        }
    }
    if (n == 1) {
        *dev = 0;
        return true;
    }
    CUdevice d;
    if (!REAL(cuCtxGetDevice) || REAL(cuCtxGetDevice)(&d) != CUDA_SUCCESS) return false;
    *dev = (int)d;
    return true;
}

int tshim_hook_index(const char *name)
{
    for (int i = 0; i < TSHIM_SYM_CU_HOOK_END; i++)
        if (!strcmp(name, tshim_sym_name[i])) return i;
    for (int i = TSHIM_SYM_CU_END + 1; i < TSHIM_SYM_NVML_HOOK_END; i++)
        if (!strcmp(name, tshim_sym_name[i])) return i;
    return -1;
}

/* Is addr inside the same shared object as the real library's handle? */
static bool _same_object(const void *addr, void *handle)
{
    if (!handle) return false;
    Dl_info a, b;
    void *probe = _get_real_dlsym()(handle, handle == _nvml_handle ? "nvmlInit_v2" : "cuInit");
    return probe && dladdr(addr, &a) && dladdr(probe, &b) && a.dli_fbase == b.dli_fbase;
}

/* Slow path of dlsym for a hooked name; returns the answer. */
__attribute__((noinline)) static void *_dlsym_hooked(dlsym_fn real, void *handle, const char *name,
                                                     int idx)
{
    void *r = real(handle, name);
    if (!r || r == tshim_wrapper[idx] || _in_init) return r;
    bool nvml = idx > TSHIM_SYM_CU_END;
    if (nvml)
        tshim_nvml_init();
    else
        tshim_init();
    if (r == tshim_real[idx] || _same_object(r, nvml ? _nvml_handle : _cuda_handle))
        return tshim_wrapper[idx];
    return r; /* some other library's symbol of that name */
}

TSHIM_EXPORT void *dlsym(void *handle, const char *name)
{
    dlsym_fn real = _get_real_dlsym();
    if (TSHIM_UNLIKELY(!real)) return NULL;
    if (((name[0] == 'c' && name[1] == 'u') || (name[0] == 'n' && name[1] == 'v'))) {
        int idx = tshim_hook_index(name);
        if (idx >= 0) return _dlsym_hooked(real, handle, name, idx);
    }
    return real(handle, name); /* a sibling call: glibc sees our caller */
}
