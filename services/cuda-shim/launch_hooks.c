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

#define LAUNCH_KERNEL_BODY(sym)                                                                    \
    tshim_init();                                                                                  \
    NEED(sym);                                                                                     \
    if (TSHIM_LIKELY(!tshim_limiter_on))                                                           \
        return REAL(sym)(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,         \
                         sharedMemBytes, hStream, kernelParams, extra);                            \
    tshim_ticket t;                                                                                \
    tshim_limiter_before(&t,                                                                       \
                         tshim_kernel_key(f, _threads(gridDimX, gridDimY, gridDimZ, blockDimX,     \
                                                      blockDimY, blockDimZ)),                      \
                         hStream);                                                                 \
    CUresult r = REAL(sym)(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,       \
                           sharedMemBytes, hStream, kernelParams, extra);                          \
    tshim_limiter_after(&t, hStream, r);                                                           \
    return r

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
    tshim_init();                                                                                  \
    NEED(sym);                                                                                     \
    if (TSHIM_LIKELY(!tshim_limiter_on))                                                           \
        return REAL(sym)(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,         \
                         sharedMemBytes, hStream, kernelParams);                                   \
    tshim_ticket t;                                                                                \
    tshim_limiter_before(&t,                                                                       \
                         tshim_kernel_key(f, _threads(gridDimX, gridDimY, gridDimZ, blockDimX,     \
                                                      blockDimY, blockDimZ)),                      \
                         hStream);                                                                 \
    CUresult r = REAL(sym)(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,       \
                           sharedMemBytes, hStream, kernelParams);                                 \
    tshim_limiter_after(&t, hStream, r);                                                           \
    return r

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
    tshim_init();                                                                                  \
    NEED(sym);                                                                                     \
    if (TSHIM_LIKELY(!tshim_limiter_on) || !config)                                                \
        return REAL(sym)(config, f, kernelParams, extra);                                          \
    tshim_ticket t;                                                                                \
    CUstream s = config->hStream;                                                                  \
    tshim_limiter_before(                                                                          \
        &t,                                                                                        \
        tshim_kernel_key(f, _threads(config->gridDimX, config->gridDimY, config->gridDimZ,         \
                                     config->blockDimX, config->blockDimY, config->blockDimZ)),    \
        s);                                                                                        \
    CUresult r = REAL(sym)(config, f, kernelParams, extra);                                        \
    tshim_limiter_after(&t, s, r);                                                                 \
    return r

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
    tshim_init();                                                                                  \
    NEED(sym);                                                                                     \
    if (TSHIM_LIKELY(!tshim_limiter_on)) return REAL(sym)(hGraphExec, hStream);                    \
    tshim_ticket t;                                                                                \
    tshim_limiter_before(&t, tshim_kernel_key(hGraphExec, 0x6a09e667u), hStream);                  \
    CUresult r = REAL(sym)(hGraphExec, hStream);                                                   \
    tshim_limiter_after(&t, hStream, r);                                                           \
    return r

TSHIM_EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    GRAPH_BODY(cuGraphLaunch);
}

TSHIM_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    GRAPH_BODY(cuGraphLaunch_ptsz);
}
