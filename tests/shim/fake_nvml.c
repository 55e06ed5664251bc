/* fake_nvml.c: a fake libnvidia-ml.so.1 over the same fake_state as fake_cuda.c.
 *
 * NVML numbers the FAKECU_DEVICES devices in the reverse of CUDA's order (NVML
 * index i is CUDA device n-1-i), as a host's PCI order may differ from CUDA's:
 * the shim must map by UUID, not by index. A device's UUID is what fake
 * cuDeviceGetUuid_v2 says for its CUDA ordinal; its PCI bus id is
 * "00000000:<ordinal in hex>:00.0" and its serial "fake-<ordinal>".
 *
 * Per-process utilisation (for the agent's sampler, tests/unit/agent/
 * test_gpu_nvml.c): FAKE_NVML_PROC_UTIL="pid:sm@ts,..." are the samples of
 * every device; nvmlDeviceGetProcessUtilization answers those after its
 * last-seen timestamp (NOT_FOUND when none), INSUFFICIENT_SIZE with the count
 * for a NULL or short buffer, and FAKE_NVML_PROC_UTIL_ERR=<code> when set.
 * FAKE_NVML_INIT_ERR=<code> makes nvmlInit_v2 fail. */
#include "services/cuda-shim/hooks.h"
#include "tests/shim/fake_state.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define EXPORT __attribute__((visibility("default")))

typedef struct nvmlDevice_st {
    unsigned cuda; /* the CUDA ordinal of this device */
} fake_dev;
static fake_dev _devs[FAKE_MAX_DEV];

EXPORT nvmlReturn_t nvmlInit_v2(void);
EXPORT nvmlReturn_t nvmlShutdown(void);
EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned n);

static unsigned _count(void)
{
    int64_t n = fake_env_i64("FAKECU_DEVICES", 1);
    return n < 1 ? 1 : n > FAKE_MAX_DEV ? FAKE_MAX_DEV : (unsigned)n;
}

static fake_dev *_dev(unsigned cuda)
{
    _devs[cuda].cuda = cuda;
    return &_devs[cuda];
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    return (nvmlReturn_t)fake_env_i64("FAKE_NVML_INIT_ERR", 0);
}
EXPORT nvmlReturn_t nvmlShutdown(void)
{
    return 0;
}
EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n)
{
    if (!n) return TSHIM_NVML_ERROR_INVALID_ARGUMENT;
    *n = _count();
    return 0;
}
EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned *n)
{
    return nvmlDeviceGetCount_v2(n);
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d)
{
    if (i >= _count() || !d) return TSHIM_NVML_ERROR_INVALID_ARGUMENT;
    *d = _dev(_count() - 1 - i);
    return 0;
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned i, nvmlDevice_t *d)
{
    return nvmlDeviceGetHandleByIndex_v2(i, d);
}
EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned *i)
{
    *i = _count() - 1 - d->cuda;
    return 0;
}
EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned n)
{
    snprintf(buf, n, "GPU-%02xababab-abab-abab-abab-abababababab", d->cuda);
    return 0;
}

/* Look a device up by a key formatted from its ordinal. */
static nvmlReturn_t _find(const char *key, nvmlDevice_t *d, const char *fmt)
{
    if (!key || !d) return TSHIM_NVML_ERROR_INVALID_ARGUMENT;
    char want[96];
    for (unsigned c = 0; c < _count(); c++) {
        snprintf(want, sizeof(want), fmt, c);
        if (!strcasecmp(want, key)) {
            *d = _dev(c);
            return 0;
        }
    }
    return TSHIM_NVML_ERROR_NOT_FOUND;
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *d)
{
    return _find(uuid, d, "GPU-%02xababab-abab-abab-abab-abababababab");
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *d)
{
    return _find(bus, d, "00000000:%02X:00.0");
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleBySerial(const char *serial, nvmlDevice_t *d)
{
    return _find(serial, d, "fake-%u");
}
EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    m->total = (unsigned long long)fake_total();
    m->free = (unsigned long long)fake_free((int)d->cuda);
    m->used = m->total - m->free;
    return 0;
}
EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m)
{
    m->total = (unsigned long long)fake_total();
    m->reserved = 0;
    m->free = (unsigned long long)fake_free((int)d->cuda);
    m->used = m->total - m->free;
    return 0;
}

/* nvmlProcessUtilizationSample_t (nvml.h) */
typedef struct {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil, memUtil, encUtil, decUtil;
} fake_proc_sample;

EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d, fake_proc_sample *out,
                                                    unsigned *count, unsigned long long last);
EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d, fake_proc_sample *out,
                                                    unsigned *count, unsigned long long last)
{
    if (!d || !count) return TSHIM_NVML_ERROR_INVALID_ARGUMENT;
    int64_t err = fake_env_i64("FAKE_NVML_PROC_UTIL_ERR", 0);
    if (err) return (nvmlReturn_t)err;
    const char *spec = getenv("FAKE_NVML_PROC_UTIL");
    unsigned n = 0;
    for (const char *p = spec; p && *p;) {
        unsigned pid, sm;
        unsigned long long ts;
        int used = 0;
        if (sscanf(p, "%u:%u@%llu%n", &pid, &sm, &ts, &used) != 3) break;
        if (ts > last) {
            if (out && n < *count)
                out[n] = (fake_proc_sample){.pid = pid, .timeStamp = ts, .smUtil = sm};
            n++;
        }
        p += used;
        if (*p == ',') p++;
    }
    if (!n) return TSHIM_NVML_ERROR_NOT_FOUND;
    bool short_buf = !out || n > *count;
    *count = n;
    return short_buf ? 7 /* NVML_ERROR_INSUFFICIENT_SIZE */ : 0;
}
