/* meminfo.c: the memory views. cuMemGetInfo_v2, cuDeviceTotalMem_v2 and NVML's
 * nvmlDeviceGetMemoryInfo(_v2) all report, on a capped device,
 *     total = min(cap, physical total)
 *     free  = min(cap - container usage, physical free)
 * so a framework that sizes its caches from free memory sizes them to the cap.
 *
 * NVML numbers devices its own way (all GPUs, PCI order); the shim maps an NVML
 * handle to the CUDA ordinal by UUID when the driver is initialised, else by its
 * visible index (visibility.c: with visible_uuids, NVML's numbering is made the
 * container's CUDA numbering; without, the real NVML index). */
#include "services/cuda-shim/hooks.h"
#include "services/cuda-shim/region.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static inline uint64_t _min(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* Clamp (total, free) for dev; returns false when dev is not capped. */
static bool _clamp(int dev, uint64_t *total, uint64_t *free_b)
{
    if (dev < 0 || dev >= TSHIM_MAX_DEVICES || !tshim_cfg.mem_limit[dev]) return false;
    uint64_t cap = tshim_cfg.mem_limit[dev];
    (void)tshim_region_reap_if_free(); /* usage of processes gone since */
    uint64_t used = tshim_region_used(dev);
    *total = _min(cap, *total);
    *free_b = _min(cap - _min(used, cap), *free_b);
    if (*free_b > *total) *free_b = *total;
    return true;
}

TSHIM_EXPORT CUresult cuMemGetInfo_v2(size_t *free_b, size_t *total)
{
    tshim_init();
    if (!REAL(cuMemGetInfo_v2)) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = REAL(cuMemGetInfo_v2)(free_b, total);
    int dev;
    if (r != CUDA_SUCCESS || !tshim_cfg.any_mem_limit || !free_b || !total ||
        !tshim_current_device(&dev))
        return r;
    uint64_t t = *total, f = *free_b;
    if (_clamp(dev, &t, &f)) {
        *total = (size_t)t;
        *free_b = (size_t)f;
    }
    return r;
}

TSHIM_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    tshim_init();
    if (!REAL(cuDeviceTotalMem_v2)) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = REAL(cuDeviceTotalMem_v2)(bytes, dev);
    if (r == CUDA_SUCCESS && bytes && dev >= 0 && dev < TSHIM_MAX_DEVICES &&
        tshim_cfg.mem_limit[dev])
        *bytes = (size_t)_min(*bytes, tshim_cfg.mem_limit[dev]);
    return r;
}

/* ---- NVML ---------------------------------------------------------------------- */
#define NREAL(s) ((tshim_pfn_##s)tshim_real[TSHIM_SYM_##s])

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" from CUDA's 16 bytes. */
static void _fmt_uuid(const CUuuid *u, char *out, size_t n)
{
    const unsigned char *b = (const unsigned char *)u->bytes;
    snprintf(out, n, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

static int _nvml_to_cuda(nvmlDevice_t device)
{
    char nv[96];
    if (NREAL(nvmlDeviceGetUUID) && NREAL(nvmlDeviceGetUUID)(device, nv, sizeof(nv)) == 0) {
        tshim_init();
        int count = 0;
        if (REAL(cuDeviceGetCount) && REAL(cuDeviceGetUuid_v2) &&
            REAL(cuDeviceGetCount)(&count) == CUDA_SUCCESS) {
            for (int d = 0; d < count && d < TSHIM_MAX_DEVICES; d++) {
                CUuuid u;
                char cu[96];
                if (REAL(cuDeviceGetUuid_v2)(&u, d) != CUDA_SUCCESS) continue;
                _fmt_uuid(&u, cu, sizeof(cu));
                if (!strcasecmp(cu, nv)) return d;
            }
        }
    }
    unsigned idx;
    return tshim_nvml_visible_index(device, &idx) ? (int)idx : -1;
}

TSHIM_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    tshim_nvml_init();
    if (!NREAL(nvmlDeviceGetMemoryInfo)) return TSHIM_NVML_ERROR_FUNCTION_NOT_FOUND;
    nvmlReturn_t r = NREAL(nvmlDeviceGetMemoryInfo)(device, memory);
    if (r != TSHIM_NVML_SUCCESS || !memory || !tshim_cfg.any_mem_limit) return r;
    uint64_t t = memory->total, f = memory->free;
    if (_clamp(_nvml_to_cuda(device), &t, &f)) {
        memory->total = t;
        memory->free = f;
        memory->used = t - f;
    }
    return r;
}

TSHIM_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    tshim_nvml_init();
    if (!NREAL(nvmlDeviceGetMemoryInfo_v2)) return TSHIM_NVML_ERROR_FUNCTION_NOT_FOUND;
    nvmlReturn_t r = NREAL(nvmlDeviceGetMemoryInfo_v2)(device, memory);
    if (r != TSHIM_NVML_SUCCESS || !memory || !tshim_cfg.any_mem_limit) return r;
    uint64_t t = memory->total, f = memory->free;
    if (_clamp(_nvml_to_cuda(device), &t, &f)) {
        memory->total = t;
        memory->free = f;
        memory->reserved = _min(memory->reserved, t - f);
        memory->used = t - f - memory->reserved;
    }
    return r;
}
