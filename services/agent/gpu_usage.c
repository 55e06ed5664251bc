/* gpu_usage.c: GPU memory from the cuda-shim's region (gpu_usage.h). */
#include "services/agent/gpu_usage.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcommon/cuda_region.h"

_Static_assert(GPU_USAGE_MAX_DEVICES == CUDA_REGION_MAX_DEVICES, "one device count");

char *gpu_usage_region_path(const char *gpu_conf_dir, const char *kernel_id)
{
    return ts_asprintf("%s/%s/shared/" CUDA_REGION_FILE, gpu_conf_dir, kernel_id);
}

bool gpu_usage_read(const char *path, int n, gpu_usage *out, ts_err *err)
{
    memset(out, 0, sizeof(*out));
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        ts_err_set(err, "%s: %s", path, strerror(errno));
        return false;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(cuda_region)) {
        ts_err_set(err, "%s: not a GPU accounting region (size)", path);
        close(fd);
        return false;
    }
    const cuda_region *r = mmap(NULL, sizeof(cuda_region), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (r == MAP_FAILED) {
        ts_err_set(err, "mmap %s: %s", path, strerror(errno));
        return false;
    }
    bool ok = __atomic_load_n(&r->magic, __ATOMIC_ACQUIRE) == CUDA_REGION_MAGIC &&
              r->version == CUDA_REGION_VERSION && r->size == sizeof(cuda_region);
    if (!ok) {
        ts_err_set(err, "%s: not a GPU accounting region (magic, version)", path);
    } else {
        if (n > CUDA_REGION_MAX_DEVICES) n = CUDA_REGION_MAX_DEVICES;
        for (int i = 0; i < n; i++) {
            uint64_t used = __atomic_load_n(&r->used[i], __ATOMIC_RELAXED);
            uint64_t peak = __atomic_load_n(&r->peak[i], __ATOMIC_RELAXED);
            out->mem_bytes[i] = used > INT64_MAX ? INT64_MAX : (int64_t)used;
            out->mem_peak_bytes[i] = peak > INT64_MAX ? INT64_MAX : (int64_t)peak;
            if (out->mem_peak_bytes[i] < out->mem_bytes[i])
                out->mem_peak_bytes[i] = out->mem_bytes[i];
        }
        out->n_devices = n < 0 ? 0 : n;
    }
    munmap((void *)r, sizeof(cuda_region));
    return ok;
}
