/* interpose.h: how callers that do not link against the hooks still reach
 * them: cuGetProcAddress and dlsym on libcuda's or libnvidia-ml's own handle.
 *
 * Frameworks (libcudart among them) fetch every driver entry point through
 * cuGetProcAddress by base name ("cuMemAlloc"), the CUDA version they were
 * built for and a stream flag. The real driver answers first (so
 * symbolStatus, versions it does not know, and symbols we do not hook behave
 * exactly as without the shim); if it found the symbol and we hook the
 * variant that name, version and flags select, our wrapper is handed back
 * instead. The variant is chosen the way the driver does: the highest
 * version not above cudaVersion, the _ptsz/_ptds variant when
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM is set.
 *
 * Why dlsym is interposed: symbol preemption by LD_PRELOAD covers callers
 * that link libcuda, and dlsym(RTLD_DEFAULT, ...). It does not cover
 * dlsym(handle_of_libcuda, "cuMemAlloc_v2"), which searches only libcuda's
 * own scope; that is how libcudart finds cuGetProcAddress. Our dlsym forwards
 * every name that is not a hooked cu* / nvml* symbol with a tail call to
 * glibc's dlsym (compiled as a jump, so glibc still sees the original caller
 * and RTLD_NEXT keeps its meaning). For a hooked name it asks glibc, and if
 * the answer is the real driver's function it returns our wrapper instead. */
#ifndef TESSERA_CUDA_SHIM_INTERPOSE_H
#define TESSERA_CUDA_SHIM_INTERPOSE_H

#include "services/cuda-shim/shim.h"

/* The hooks, in shim.h's symbol order (NULL for the "used" ranges). */
extern void *const tshim_wrapper[TSHIM_SYM_COUNT];

/* The wrapper for a driver symbol fetched by base name, version and flags, or NULL
 * when the shim does not hook that variant. */
void *tshim_procaddr_wrapper(const char *symbol, int cuda_version, cuuint64_t flags);

#endif
