/* gpu_usage.c: GPU memory and time from the cuda-shim's region (gpu_usage.h). */
#include "services/agent/gpu_usage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
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
    /* version 2, or version 1 (its prefix: a container started before an upgrade) */
    struct stat st;
    size_t len = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        if (st.st_size >= (off_t)sizeof(cuda_region))
            len = sizeof(cuda_region);
        else if (st.st_size >= (off_t)CUDA_REGION_V1_SIZE)
            len = CUDA_REGION_V1_SIZE;
    }
    if (!len) {
        ts_err_set(err, "%s: not a GPU accounting region (size)", path);
        close(fd);
        return false;
    }
    const cuda_region *r = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (r == MAP_FAILED) {
        ts_err_set(err, "mmap %s: %s", path, strerror(errno));
        return false;
    }
    bool magic = __atomic_load_n(&r->magic, __ATOMIC_ACQUIRE) == CUDA_REGION_MAGIC;
    bool v2 = len == sizeof(cuda_region) && r->version == CUDA_REGION_VERSION &&
              r->size == sizeof(cuda_region);
    bool v1 = r->version == 1 && r->size == CUDA_REGION_V1_SIZE;
    bool ok = magic && (v1 || v2);
    if (!ok) {
        ts_err_set(err, "%s: not a GPU accounting region (magic, version)", path);
    } else {
        if (n > CUDA_REGION_MAX_DEVICES) n = CUDA_REGION_MAX_DEVICES;
        out->busy_counted = v2 && __atomic_load_n(&r->busy_counted, __ATOMIC_RELAXED) != 0;
        for (int i = 0; i < n; i++) {
            uint64_t used = __atomic_load_n(&r->used[i], __ATOMIC_RELAXED);
            uint64_t peak = __atomic_load_n(&r->peak[i], __ATOMIC_RELAXED);
            out->mem_bytes[i] = used > INT64_MAX ? INT64_MAX : (int64_t)used;
            out->mem_peak_bytes[i] = peak > INT64_MAX ? INT64_MAX : (int64_t)peak;
            if (out->mem_peak_bytes[i] < out->mem_bytes[i])
                out->mem_peak_bytes[i] = out->mem_bytes[i];
            if (out->busy_counted) {
                /* a correction can take a little back; never below zero */
                int64_t busy =
                    atomic_load_explicit(&((cuda_region *)r)->busy_ns[i], memory_order_relaxed);
                out->busy_ns[i] = busy > 0 ? busy : 0;
            }
        }
        out->n_devices = n < 0 ? 0 : n;
    }
    munmap((void *)r, len);
    return ok;
}
