/* launch_hooks.c: every launch path goes through the compute-share limiter.
 * Without a share below 1 each hook is one predictable branch and a jump. */
#include "services/cuda-shim/hooks.h"
#include "services/cuda-shim/limiter.h"

#define NEED(s)                                                                                    \
    do {                                                                                           \
        if (TSHIM_UNLIKELY(!REAL(s))) return CUDA_ERROR_NOT_INITIALIZED;                           \
    } while (0)

static inline uint64_t _threads(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                unsigned bz)
{
    return (uint64_t)gx * gy * gz * bx * by * bz;
}

/* A launch through the limiter: it pays key's estimated GPU time on stream
 * before REAL(sym)(args...) is submitted. */
#define LIMITED_LAUNCH(sym, key, stream, ...)                                                      \
    tshim_init();                                                                                  \
    NEED(sym);                                                                                     \
    if (TSHIM_LIKELY(!tshim_limiter_on)) return REAL(sym)(__VA_ARGS__);                            \
    tshim_ticket t;                                                                                \
    tshim_limiter_before(&t, key, stream);                                                         \
    CUresult r = REAL(sym)(__VA_ARGS__);                                                           \
    tshim_limiter_after(&t, stream, r);                                                            \
    return r

/* The key of a kernel launched with the grid of the hook's arguments. */
#define GRID_KEY                                                                                   \
    tshim_kernel_key(f, _threads(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ))

#define LAUNCH_KERNEL_BODY(sym)                                                                    \
    LIMITED_LAUNCH(sym, GRID_KEY, hStream, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,  \
                   blockDimZ, sharedMemBytes, hStream, kernelParams, extra)

TSHIM_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                     unsigned int gridDimZ, unsigned int blockDimX,
                                     unsigned int blockDimY, unsigned int blockDimZ,
                                     unsigned int sharedMemBytes, CUstream hStream,
                                     void **kernelParams, void **extra)
{
    LAUNCH_KERNEL_BODY(cuLaunchKernel);
}

TSHIM_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                          unsigned int gridDimY, unsigned int gridDimZ,
                                          unsigned int blockDimX, unsigned int blockDimY,
                                          unsigned int blockDimZ, unsigned int sharedMemBytes,
                                          CUstream hStream, void **kernelParams, void **extra)
{
    LAUNCH_KERNEL_BODY(cuLaunchKernel_ptsz);
}

#define LAUNCH_COOP_BODY(sym)                                                                      \
    LIMITED_LAUNCH(sym, GRID_KEY, hStream, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,  \
                   blockDimZ, sharedMemBytes, hStream, kernelParams)

TSHIM_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                                unsigned int gridDimY, unsigned int gridDimZ,
                                                unsigned int blockDimX, unsigned int blockDimY,
                                                unsigned int blockDimZ, unsigned int sharedMemBytes,
                                                CUstream hStream, void **kernelParams)
{
    LAUNCH_COOP_BODY(cuLaunchCooperativeKernel);
}

TSHIM_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                                     unsigned int gridDimY, unsigned int gridDimZ,
                                                     unsigned int blockDimX, unsigned int blockDimY,
                                                     unsigned int blockDimZ,
                                                     unsigned int sharedMemBytes, CUstream hStream,
                                                     void **kernelParams)
{
    LAUNCH_COOP_BODY(cuLaunchCooperativeKernel_ptsz);
}

#define LAUNCH_EX_BODY(sym)                                                                        \
    if (TSHIM_UNLIKELY(!config)) {                                                                 \
        tshim_init();                                                                              \
        NEED(sym);                                                                                 \
        return REAL(sym)(config, f, kernelParams, extra);                                          \
    }                                                                                              \
    LIMITED_LAUNCH(                                                                                \
        sym,                                                                                       \
        tshim_kernel_key(f, _threads(config->gridDimX, config->gridDimY, config->gridDimZ,         \
                                     config->blockDimX, config->blockDimY, config->blockDimZ)),    \
        config->hStream, config, f, kernelParams, extra)

TSHIM_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                       void **kernelParams, void **extra)
{
    LAUNCH_EX_BODY(cuLaunchKernelEx);
}

TSHIM_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                            void **kernelParams, void **extra)
{
    LAUNCH_EX_BODY(cuLaunchKernelEx_ptsz);
}

#define GRAPH_BODY(sym)                                                                            \
    LIMITED_LAUNCH(sym, tshim_kernel_key(hGraphExec, 0x6a09e667u), hStream, hGraphExec, hStream)

TSHIM_EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    GRAPH_BODY(cuGraphLaunch);
}

TSHIM_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    GRAPH_BODY(cuGraphLaunch_ptsz);
}
