/* hooks.h: prototypes of the exported hooks that cuda.h does not declare under
 * these exact names (per-thread-default-stream variants, the CUDA 11.3
 * cuGetProcAddress), and the NVML subset the shim needs. */
#ifndef TESSERA_CUDA_SHIM_HOOKS_H
#define TESSERA_CUDA_SHIM_HOOKS_H

#include "services/cuda-shim/driver.h"
#include "services/cuda-shim/init.h"
#include "services/cuda-shim/shim.h"

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                             unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                             unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                             void **kernelParams, void **extra);
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                               void **extra);
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                        unsigned int gridDimZ, unsigned int blockDimX,
                                        unsigned int blockDimY, unsigned int blockDimZ,
                                        unsigned int sharedMemBytes, CUstream hStream,
                                        void **kernelParams);
CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);

/* ---- NVML (declared here: there is no nvml.h on build machines) --------------- */
typedef int nvmlReturn_t; /* NVML_SUCCESS = 0 */
typedef struct nvmlDevice_st *nvmlDevice_t;
#define TSHIM_NVML_SUCCESS 0
#define TSHIM_NVML_ERROR_UNINITIALIZED 1
#define TSHIM_NVML_ERROR_INVALID_ARGUMENT 2
#define TSHIM_NVML_ERROR_NOT_FOUND 6
#define TSHIM_NVML_ERROR_LIBRARY_NOT_FOUND 12
#define TSHIM_NVML_ERROR_FUNCTION_NOT_FOUND 13

typedef struct nvmlMemory_st {
    unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

typedef nvmlReturn_t (*tshim_pfn_nvmlDeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t *);
typedef nvmlReturn_t (*tshim_pfn_nvmlDeviceGetMemoryInfo_v2)(nvmlDevice_t, nvmlMemory_v2_t *);
typedef nvmlReturn_t (*tshim_pfn_nvmlDeviceGetUUID)(nvmlDevice_t, char *, unsigned int);
typedef nvmlReturn_t (*tshim_pfn_nvmlDeviceGetIndex)(nvmlDevice_t, unsigned int *);
typedef nvmlReturn_t (*tshim_pfn_nvmlDeviceGetCount)(unsigned int *);
typedef nvmlReturn_t (*tshim_pfn_nvmlDeviceGetCount_v2)(unsigned int *);
typedef nvmlReturn_t (*tshim_pfn_nvmlDeviceGetHandleByIndex)(unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*tshim_pfn_nvmlDeviceGetHandleByIndex_v2)(unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*tshim_pfn_nvmlDeviceGetHandleByUUID)(const char *, nvmlDevice_t *);
typedef nvmlReturn_t (*tshim_pfn_nvmlDeviceGetHandleByPciBusId)(const char *, nvmlDevice_t *);
typedef nvmlReturn_t (*tshim_pfn_nvmlDeviceGetHandleByPciBusId_v2)(const char *, nvmlDevice_t *);
typedef nvmlReturn_t (*tshim_pfn_nvmlDeviceGetHandleBySerial)(const char *, nvmlDevice_t *);

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory);
nvmlReturn_t nvmlDeviceGetCount(unsigned int *count);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count);
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *bus_id, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleBySerial(const char *serial, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index);

/* The visible position of an NVML device (visibility.c): its index among the
 * devices NVML shows the container. Returns false for a hidden device; with no
 * visible_uuids configured, the real NVML index. */
bool tshim_nvml_visible_index(nvmlDevice_t device, unsigned int *index) TS_MUST_CHECK;

#endif
