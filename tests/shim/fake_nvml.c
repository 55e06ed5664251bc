/* fake_nvml.c: a fake libnvidia-ml.so.1 over the same fake_state as fake_cuda.c.
 * NVML device i is CUDA device i; UUIDs match what fake cuDeviceGetUuid_v2 says. */
#include "services/agent/cuda-shim/hooks.h"
#include "tests/shim/fake_state.h"

#include <stdio.h>

#define EXPORT __attribute__((visibility("default")))

typedef struct nvmlDevice_st {
    unsigned index;
} fake_dev;
static fake_dev _devs[FAKE_MAX_DEV];

EXPORT nvmlReturn_t nvmlInit_v2(void);
EXPORT nvmlReturn_t nvmlShutdown(void);
EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n);
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d);
EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned *i);
EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned n);

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    return 0;
}
EXPORT nvmlReturn_t nvmlShutdown(void)
{
    return 0;
}
EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n)
{
    *n = (unsigned)fake_env_i64("FAKECU_DEVICES", 1);
    return 0;
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d)
{
    if (i >= FAKE_MAX_DEV) return TSHIM_NVML_ERROR_INVALID_ARGUMENT;
    _devs[i].index = i;
    *d = &_devs[i];
    return 0;
}
EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned *i)
{
    *i = d->index;
    return 0;
}
EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned n)
{
    snprintf(buf, n, "GPU-%02xababab-abab-abab-abab-abababababab", d->index);
    return 0;
}
EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    m->total = (unsigned long long)fake_total();
    m->free = (unsigned long long)fake_free((int)d->index);
    m->used = m->total - m->free;
    return 0;
}
EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m)
{
    m->total = (unsigned long long)fake_total();
    m->reserved = 0;
    m->free = (unsigned long long)fake_free((int)d->index);
    m->used = m->total - m->free;
    return 0;
}
