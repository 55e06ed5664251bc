/* gpu_nvml.c: per-process SM utilisation from NVML (gpu_nvml.h). */
#include "services/agent/gpu_nvml.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "libcommon/log.h"

/* The few NVML declarations used (there is no nvml.h on build machines); the
 * layouts are NVML's (nvml.h, stable since 2014). */
typedef int nvml_ret;
typedef struct nvml_device_st *nvml_device;
#define NVML_OK 0
#define NVML_ERR_NOT_FOUND 6
#define NVML_ERR_INSUFFICIENT_SIZE 7

typedef struct nvml_proc_sample { /* nvmlProcessUtilizationSample_t */
    unsigned int pid;
    unsigned long long timeStamp; /* us */
    unsigned int smUtil;          /* % */
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
} nvml_proc_sample;

struct gpu_nvml {
    void *lib;
    nvml_ret (*init)(void);
    nvml_ret (*shutdown)(void);
    nvml_ret (*by_uuid)(const char *, nvml_device *);
    nvml_ret (*proc_util)(nvml_device, nvml_proc_sample *, unsigned int *, unsigned long long);
};

gpu_nvml *gpu_nvml_open(const char *library)
{
    if (!library || !*library) return NULL;
    void *lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        TLOG_INFO("no NVML: GPU utilisation not measured", "library=%s error=\"%s\"", library,
                  why ? why : "dlopen failed");
        return NULL;
    }
    gpu_nvml *n = ts_calloc(1, sizeof(*n));
    n->lib = lib;
    *(void **)&n->init = dlsym(lib, "nvmlInit_v2");
    *(void **)&n->shutdown = dlsym(lib, "nvmlShutdown");
    *(void **)&n->by_uuid = dlsym(lib, "nvmlDeviceGetHandleByUUID");
    *(void **)&n->proc_util = dlsym(lib, "nvmlDeviceGetProcessUtilization");
    if (!n->init || !n->shutdown || !n->by_uuid || !n->proc_util) {
        TLOG_INFO("no NVML: GPU utilisation not measured",
                  "library=%s error=\"a function is missing\"", library);
        dlclose(lib);
        free(n);
        return NULL;
    }
    nvml_ret r = n->init();
    if (r != NVML_OK) {
        TLOG_INFO("no NVML: GPU utilisation not measured", "library=%s error=\"nvmlInit_v2: %d\"",
                  library, r);
        dlclose(lib);
        free(n);
        return NULL;
    }
    TLOG_INFO("NVML: GPU utilisation measured", "library=%s", library);
    return n;
}

void gpu_nvml_close(gpu_nvml *n)
{
    if (!n) return;
    n->shutdown();
    dlclose(n->lib);
    free(n);
}

static bool _ours(unsigned int pid, const int *pids, int n_pids)
{
    for (int i = 0; i < n_pids; i++)
        if (pids[i] > 0 && (unsigned int)pids[i] == pid) return true;
    return false;
}

static int _by_stamp(const void *a, const void *b)
{
    unsigned long long x = ((const nvml_proc_sample *)a)->timeStamp;
    unsigned long long y = ((const nvml_proc_sample *)b)->timeStamp;
    return x < y ? -1 : x > y;
}

/* The mean over the timestamps of our samples of their summed smUtil (each
 * capped at 100); 0 without any. Moves *last to the newest sample. Our
 * samples are moved to the front of s and sorted (count <= GPU_NVML_MAX_SAMPLES). */
static double _mean(nvml_proc_sample *s, unsigned int count, const int *pids, int n_pids,
                    uint64_t *last)
{
    unsigned int ours = 0;
    for (unsigned int i = 0; i < count; i++) {
        if (s[i].timeStamp > *last) *last = s[i].timeStamp;
        if (_ours(s[i].pid, pids, n_pids)) s[ours++] = s[i];
    }
    qsort(s, ours, sizeof(*s), _by_stamp);
    double total = 0;
    int stamps = 0;
    for (unsigned int i = 0; i < ours;) {
        double sum = 0;
        unsigned int j = i;
        for (; j < ours && s[j].timeStamp == s[i].timeStamp; j++)
            sum += s[j].smUtil > 100 ? 100 : s[j].smUtil;
        total += sum > 100 ? 100 : sum;
        stamps++;
        i = j;
    }
    return stamps ? total / stamps : 0;
}

bool gpu_nvml_util(gpu_nvml *n, const char *uuid, const int *pids, int n_pids,
                   uint64_t *last_seen_us, double *pct)
{
    if (!n || !uuid || !*uuid) return false;
    nvml_device d;
    nvml_ret r = n->by_uuid(uuid, &d);
    if (r != NVML_OK) {
        TLOG_DEBUG("NVML device not found", "uuid=%s error=%d", uuid, r);
        return false;
    }
    /* the buffer size first (a NULL buffer: INSUFFICIENT_SIZE, or OK, with the count) */
    unsigned int count = 0;
    r = n->proc_util(d, NULL, &count, (unsigned long long)*last_seen_us);
    if (r == NVML_ERR_NOT_FOUND) {
        *pct = 0;
        return true;
    }
    if ((r != NVML_OK && r != NVML_ERR_INSUFFICIENT_SIZE) || count > GPU_NVML_MAX_SAMPLES) {
        TLOG_DEBUG("NVML utilisation unreadable", "uuid=%s error=%d count=%u", uuid, r, count);
        return false;
    }
    if (count == 0) {
        *pct = 0;
        return true;
    }
    unsigned int cap = count;
    nvml_proc_sample *s = ts_calloc(cap, sizeof(*s));
    r = n->proc_util(d, s, &count, (unsigned long long)*last_seen_us);
    bool ok = true;
    if (r == NVML_ERR_NOT_FOUND) {
        *pct = 0;
    } else if (r != NVML_OK || count > cap) {
        TLOG_DEBUG("NVML utilisation unreadable", "uuid=%s error=%d count=%u", uuid, r, count);
        ok = false;
    } else {
        uint64_t last = *last_seen_us;
        *pct = _mean(s, count, pids, n_pids, &last);
        *last_seen_us = last;
    }
    free(s);
    return ok;
}
