/* init.c: the shim's one-time start-up (init.h). */
#include "services/cuda-shim/init.h"

#include <pthread.h>

#include "services/cuda-shim/driver.h"
#include "services/cuda-shim/limiter.h"
#include "services/cuda-shim/region.h"

atomic_bool tshim_inited;

static atomic_bool _nvml_inited;
static pthread_mutex_t _init_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t _nvml_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t _config_once = PTHREAD_ONCE_INIT;
static __thread bool _in_init; /* libcuda's own start-up may call back into us */

bool tshim_in_init(void)
{
    return _in_init;
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
        /* without the driver (logged) every hook answers CUDA_ERROR_NOT_INITIALIZED */
        TS_IGNORE(tshim_driver_open());
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
        /* without NVML every NVML hook answers FUNCTION_NOT_FOUND */
        TS_IGNORE(tshim_driver_open_nvml());
        if (tshim_cfg.any_mem_limit && !tshim_region_attach())
            TSHIM_LOG("no accounting region", "effect=fail_closed");
        _in_init = false;
        atomic_store_explicit(&_nvml_inited, true, memory_order_release);
    }
    pthread_mutex_unlock(&_nvml_mu);
}
