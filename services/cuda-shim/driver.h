/* driver.h: the real libcuda.so.1 and libnvidia-ml.so.1 behind the hooks.
 *
 * Nothing happens at load time: init.c opens them on the first hooked call,
 * dlopen(RTLD_NOW | RTLD_LOCAL) (which returns the already loaded copy when
 * the application linked it), and resolves every hooked and used entry
 * point (shim.h's lists) with glibc's own dlsym on that handle into
 * tshim_real. */
#ifndef TESSERA_CUDA_SHIM_DRIVER_H
#define TESSERA_CUDA_SHIM_DRIVER_H

#include "services/cuda-shim/shim.h"

/* glibc's dlsym (the shim interposes its own: interpose.c), or NULL. */
typedef void *(*tshim_dlsym_fn)(void *, const char *);
tshim_dlsym_fn tshim_driver_dlsym(void);

/* dlopen libcuda.so.1 and fill tshim_real's CUDA range; false (logged when
 * debug is on) when it is not loadable. */
bool tshim_driver_open(void) TS_MUST_CHECK;
/* The same for libnvidia-ml.so.1 and the NVML range. */
bool tshim_driver_open_nvml(void) TS_MUST_CHECK;
/* Whether addr lies in the opened libcuda (nvml: libnvidia-ml). */
bool tshim_driver_owns(const void *addr, bool nvml) TS_MUST_CHECK;

/* Visible CUDA devices (1 when unknown). With one device every allocation is on
 * device 0 and the shim skips cuCtxGetDevice. */
extern atomic_int tshim_device_count; /* 0 = not known yet */
/* The device of the calling thread's current context; false when there is none. */
bool tshim_current_device(int *dev) TS_MUST_CHECK;

/* Index of an exact hooked symbol name, or -1. */
int tshim_hook_index(const char *name);

#endif
