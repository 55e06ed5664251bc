/* visibility.c: NVML shows the container's GPUs only, numbered as CUDA numbers
 * them.
 *
 * NVML ignores CUDA_VISIBLE_DEVICES and enumerates every GPU of the host in its
 * own (PCI) order. The agent writes visible_uuids, the container's GPUs in CUDA
 * ordinal order; with it, the shim makes
 *   nvmlDeviceGetCount(_v2)          the number of those GPUs NVML has,
 *   nvmlDeviceGetHandleByIndex(_v2)  visible index i -> the NVML device whose
 *                                    UUID is the i-th of the list,
 *   nvmlDeviceGetIndex               the inverse,
 *   nvmlDeviceGetHandleByUUID / ByPciBusId(_v2) / BySerial
 *                                    NVML_ERROR_NOT_FOUND for a GPU not listed.
 * The map (visible index -> NVML index) is built once, on the first call after
 * nvmlInit succeeds, from the real NVML's UUIDs; a listed UUID that NVML does not
 * have is skipped (the others keep their order). Without visible_uuids every hook
 * forwards unchanged. */
#include "services/cuda-shim/hooks.h"

#include <pthread.h>
#include <strings.h>

#define NREAL(s) ((tshim_pfn_##s)tshim_real[TSHIM_SYM_##s])

static pthread_mutex_t _mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool _mapped;
static unsigned _nvml_index[TSHIM_MAX_DEVICES]; /* visible i -> real NVML index */
static int _uuid_of[TSHIM_MAX_DEVICES];         /* visible i -> tshim_cfg.visible_uuids[] */
static unsigned _n;

static inline bool _filtering(void)
{
    return tshim_cfg.n_visible_uuids > 0;
}

static nvmlReturn_t _real_count(unsigned *n)
{
    if (NREAL(nvmlDeviceGetCount_v2)) return NREAL(nvmlDeviceGetCount_v2)(n);
    if (NREAL(nvmlDeviceGetCount)) return NREAL(nvmlDeviceGetCount)(n);
    return TSHIM_NVML_ERROR_FUNCTION_NOT_FOUND;
}

static nvmlReturn_t _real_handle(unsigned i, nvmlDevice_t *d)
{
    if (NREAL(nvmlDeviceGetHandleByIndex_v2)) return NREAL(nvmlDeviceGetHandleByIndex_v2)(i, d);
    if (NREAL(nvmlDeviceGetHandleByIndex)) return NREAL(nvmlDeviceGetHandleByIndex)(i, d);
    return TSHIM_NVML_ERROR_FUNCTION_NOT_FOUND;
}

/* Position of uuid in the configured list, or -1. */
static int _listed(const char *uuid)
{
    for (int i = 0; i < tshim_cfg.n_visible_uuids; i++)
        if (!strcasecmp(uuid, tshim_cfg.visible_uuids[i])) return i;
    return -1;
}

/* Build the map once NVML answers; an error (NVML not initialised) is returned
 * and the next call tries again. */
static nvmlReturn_t _map(void)
{
    if (TSHIM_LIKELY(atomic_load_explicit(&_mapped, memory_order_acquire))) return 0;
    pthread_mutex_lock(&_mu);
    nvmlReturn_t r = TSHIM_NVML_SUCCESS;
    if (!atomic_load(&_mapped)) {
        unsigned count = 0;
        r = _real_count(&count);
        if (r == TSHIM_NVML_SUCCESS && !NREAL(nvmlDeviceGetUUID))
            r = TSHIM_NVML_ERROR_FUNCTION_NOT_FOUND;
        if (r == TSHIM_NVML_SUCCESS) {
            int found[TSHIM_MAX_DEVICES];
            for (int k = 0; k < TSHIM_MAX_DEVICES; k++)
                found[k] = -1;
            for (unsigned p = 0; p < count; p++) {
                nvmlDevice_t d;
                char uuid[TSHIM_UUID_LEN];
                if (_real_handle(p, &d) != TSHIM_NVML_SUCCESS ||
                    NREAL(nvmlDeviceGetUUID)(d, uuid, sizeof(uuid)) != TSHIM_NVML_SUCCESS)
                    continue;
                int k = _listed(uuid);
                if (k >= 0 && found[k] < 0) found[k] = (int)p;
            }
            _n = 0;
            for (int k = 0; k < tshim_cfg.n_visible_uuids; k++) {
                if (found[k] < 0) {
                    TSHIM_LOG("visible uuid unknown to NVML, skipped", "uuid=%s",
                              tshim_cfg.visible_uuids[k]);
                    continue;
                }
                _nvml_index[_n] = (unsigned)found[k];
                _uuid_of[_n++] = k;
            }
            TSHIM_LOG("nvml visibility", "listed=%d visible=%u nvml_devices=%u",
                      tshim_cfg.n_visible_uuids, _n, count);
            atomic_store_explicit(&_mapped, true, memory_order_release);
        }
    }
    pthread_mutex_unlock(&_mu);
    return r;
}

bool tshim_nvml_visible_index(nvmlDevice_t device, unsigned *index)
{
    if (!_filtering())
        return NREAL(nvmlDeviceGetIndex) &&
               NREAL(nvmlDeviceGetIndex)(device, index) == TSHIM_NVML_SUCCESS;
    char uuid[TSHIM_UUID_LEN];
    if (_map() != TSHIM_NVML_SUCCESS ||
        NREAL(nvmlDeviceGetUUID)(device, uuid, sizeof(uuid)) != TSHIM_NVML_SUCCESS)
        return false;
    int k = _listed(uuid);
    for (unsigned i = 0; k >= 0 && i < _n; i++)
        if (_uuid_of[i] == k) {
            *index = i;
            return true;
        }
    return false;
}

/* ---- enumeration ------------------------------------------------------------------- */

static nvmlReturn_t _count(tshim_pfn_nvmlDeviceGetCount real, unsigned *count)
{
    if (!real) return TSHIM_NVML_ERROR_FUNCTION_NOT_FOUND;
    if (!_filtering()) return real(count);
    if (!count) return TSHIM_NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = _map();
    if (r == TSHIM_NVML_SUCCESS) *count = _n;
    return r;
}

TSHIM_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned *count)
{
    tshim_nvml_init();
    return _count(NREAL(nvmlDeviceGetCount), count);
}

TSHIM_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count)
{
    tshim_nvml_init();
    return _count(NREAL(nvmlDeviceGetCount_v2), count);
}

static nvmlReturn_t _by_index(tshim_pfn_nvmlDeviceGetHandleByIndex real, unsigned index,
                              nvmlDevice_t *device)
{
    if (!real) return TSHIM_NVML_ERROR_FUNCTION_NOT_FOUND;
    if (!_filtering()) return real(index, device);
    if (!device) return TSHIM_NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = _map();
    if (r != TSHIM_NVML_SUCCESS) return r;
    if (index >= _n) return TSHIM_NVML_ERROR_INVALID_ARGUMENT; /* what NVML says past the count */
    return real(_nvml_index[index], device);
}

TSHIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned index, nvmlDevice_t *device)
{
    tshim_nvml_init();
    return _by_index(NREAL(nvmlDeviceGetHandleByIndex), index, device);
}

TSHIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *device)
{
    tshim_nvml_init();
    return _by_index(NREAL(nvmlDeviceGetHandleByIndex_v2), index, device);
}

TSHIM_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned *index)
{
    tshim_nvml_init();
    if (!NREAL(nvmlDeviceGetIndex)) return TSHIM_NVML_ERROR_FUNCTION_NOT_FOUND;
    if (!_filtering()) return NREAL(nvmlDeviceGetIndex)(device, index);
    if (!index) return TSHIM_NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = _map();
    if (r != TSHIM_NVML_SUCCESS) return r;
    /* let NVML judge the handle first (invalid handles keep their error) */
    unsigned real_index;
    r = NREAL(nvmlDeviceGetIndex)(device, &real_index);
    if (r != TSHIM_NVML_SUCCESS) return r;
    return tshim_nvml_visible_index(device, index) ? TSHIM_NVML_SUCCESS
                                                   : TSHIM_NVML_ERROR_NOT_FOUND;
}

/* ---- lookups by UUID, PCI bus id, serial: a hidden GPU is not found ------------------ */

static nvmlReturn_t _lookup(tshim_pfn_nvmlDeviceGetHandleByUUID real, const char *key,
                            nvmlDevice_t *device)
{
    if (!real) return TSHIM_NVML_ERROR_FUNCTION_NOT_FOUND;
    nvmlDevice_t d;
    nvmlReturn_t r = real(key, device ? &d : NULL);
    if (r != TSHIM_NVML_SUCCESS || !device) return r;
    unsigned i;
    if (_filtering() && !tshim_nvml_visible_index(d, &i)) return TSHIM_NVML_ERROR_NOT_FOUND;
    *device = d;
    return r;
}

/* A lookup hook: the real lookup, then a hidden GPU is not found. */
#define LOOKUP_HOOK(sym, key)                                                                      \
    TSHIM_EXPORT nvmlReturn_t sym(const char *key, nvmlDevice_t *device)                           \
    {                                                                                              \
        tshim_nvml_init();                                                                         \
        return _lookup(NREAL(sym), key, device);                                                   \
    }

LOOKUP_HOOK(nvmlDeviceGetHandleByUUID, uuid)
LOOKUP_HOOK(nvmlDeviceGetHandleByPciBusId, bus_id)
LOOKUP_HOOK(nvmlDeviceGetHandleByPciBusId_v2, bus_id)
LOOKUP_HOOK(nvmlDeviceGetHandleBySerial, serial)
