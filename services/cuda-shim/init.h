/* init.h: the shim's one-time start-up, on the first hooked call (nothing
 * happens at load time): the config (config.c), the real driver
 * (driver.h), the accounting region when a limit needs it (region.h), the
 * compute-share limiter (limiter.h). NVML is opened on the first NVML hook,
 * separately. libcuda's own start-up may call back into the hooks: a thread
 * inside the start-up is told so (tshim_in_init) and not started again. */
#ifndef TESSERA_CUDA_SHIM_INIT_H
#define TESSERA_CUDA_SHIM_INIT_H

#include "services/cuda-shim/shim.h"

/* Cheap after the first call (one acquire load). */
extern atomic_bool tshim_inited;
void tshim_init_slow(void);
static inline void tshim_init(void)
{
    if (TSHIM_LIKELY(atomic_load_explicit(&tshim_inited, memory_order_acquire))) return;
    tshim_init_slow();
}
/* Same for libnvidia-ml.so.1 (opened on the first NVML hook). */
void tshim_nvml_init(void);
/* Whether the calling thread is inside the start-up. */
bool tshim_in_init(void) TS_MUST_CHECK;

#endif
