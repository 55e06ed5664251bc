/* driver.c: the real libcuda.so.1 and libnvidia-ml.so.1 (driver.h). */
#include "services/cuda-shim/driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

void *tshim_real[TSHIM_SYM_COUNT];

#define TSHIM_NAME_HOOK(s, p, b, v, t) #s,
#define TSHIM_NAME_USED(s, p) #s,
#define TSHIM_NAME_NVML(s) #s,
const char *const tshim_sym_name[TSHIM_SYM_COUNT] = {
    TSHIM_CU_HOOKS(TSHIM_NAME_HOOK) "", TSHIM_CU_USED(TSHIM_NAME_USED) "",
    TSHIM_NVML_HOOKS(TSHIM_NAME_NVML) "", TSHIM_NVML_USED(TSHIM_NAME_NVML)};

atomic_int tshim_device_count;

static tshim_dlsym_fn _real_dlsym;
static void *_cuda_handle, *_nvml_handle;

static tshim_dlsym_fn _resolve_real_dlsym(void)
{
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.0"};
    tshim_dlsym_fn f = NULL;
    for (size_t i = 0; !f && i < sizeof(versions) / sizeof(versions[0]); i++)
        f = (tshim_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    __atomic_store_n(&_real_dlsym, f, __ATOMIC_RELEASE);
    return f;
}

tshim_dlsym_fn tshim_driver_dlsym(void)
{
    tshim_dlsym_fn f = __atomic_load_n(&_real_dlsym, __ATOMIC_ACQUIRE);
    return f ? f : _resolve_real_dlsym();
}

bool tshim_driver_open(void)
{
    tshim_dlsym_fn real_dlsym = tshim_driver_dlsym();
    _cuda_handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!_cuda_handle || !real_dlsym) {
        TSHIM_LOG("libcuda.so.1 not loadable", "error=\"%s\"", dlerror());
        return false;
    }
    for (int i = 0; i < TSHIM_SYM_CU_END; i++) {
        if (!tshim_sym_name[i][0]) continue;
        tshim_real[i] = real_dlsym(_cuda_handle, tshim_sym_name[i]);
        if (!tshim_real[i] && i > TSHIM_SYM_CU_HOOK_END) { /* e.g. only a _v2 left */
            char v2[96];
            snprintf(v2, sizeof(v2), "%s_v2", tshim_sym_name[i]);
            tshim_real[i] = real_dlsym(_cuda_handle, v2);
        }
    }
    return true;
}

bool tshim_driver_open_nvml(void)
{
    tshim_dlsym_fn real_dlsym = tshim_driver_dlsym();
    _nvml_handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!_nvml_handle || !real_dlsym) return false;
    for (int i = TSHIM_SYM_CU_END + 1; i < TSHIM_SYM_COUNT; i++)
        if (tshim_sym_name[i][0]) tshim_real[i] = real_dlsym(_nvml_handle, tshim_sym_name[i]);
    return true;
}

bool tshim_driver_owns(const void *addr, bool nvml)
{
    void *handle = nvml ? _nvml_handle : _cuda_handle;
    if (!handle) return false;
    Dl_info a, b;
    void *probe = tshim_driver_dlsym()(handle, nvml ? "nvmlInit_v2" : "cuInit");
    return probe && dladdr(addr, &a) && dladdr(probe, &b) && a.dli_fbase == b.dli_fbase;
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
