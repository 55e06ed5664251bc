/* node.c: the node's resources (node.h). */
#include "services/agent/node.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "libcommon/log.h"

/* The few CUDA driver API types and calls used here (no cuda.h needed: the
 * agent must build and run on machines without the toolkit). */
typedef int cu_result;
typedef int cu_device;
#define CU_SUCCESS 0

typedef struct cuda_api {
    cu_result (*init)(unsigned int);
    cu_result (*count)(int *);
    cu_result (*get)(cu_device *, int);
    cu_result (*name)(char *, int, cu_device);
    cu_result (*total_mem)(size_t *, cu_device);
    cu_result (*bus_id)(char *, int, cu_device);
    cu_result (*uuid)(unsigned char *, cu_device); /* CUuuid is 16 bytes */
} cuda_api;

void node_format_uuid(const unsigned char b[16], char *out, size_t n)
{
    snprintf(out, n, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

/* A mock device's UUID: FNV-1a over "<agent id>/<index>", twice with different
 * offsets, so two agents' mock GPUs differ and a restart keeps them. */
static void _mock_uuid(const char *agent_id, int index, char *out, size_t n)
{
    char key[320];
    snprintf(key, sizeof(key), "%s/%d", agent_id && *agent_id ? agent_id : "agent", index);
    unsigned char b[16];
    for (int half = 0; half < 2; half++) {
        uint64_t h = half ? 0x84222325cbf29ce4ull : 0xcbf29ce484222325ull;
        for (const char *p = key; *p; p++)
            h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
        for (int i = 0; i < 8; i++)
            b[half * 8 + i] = (unsigned char)(h >> (8 * i));
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 / variant bits, as a v4 UUID */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    node_format_uuid(b, out, n);
}

static void _detect_cuda(node_info *out)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(out->gpu_note, sizeof(out->gpu_note), "libcuda.so.1 not found: no GPUs");
        return;
    }
    cuda_api api;
    *(void **)&api.init = dlsym(h, "cuInit");
    *(void **)&api.count = dlsym(h, "cuDeviceGetCount");
    *(void **)&api.get = dlsym(h, "cuDeviceGet");
    *(void **)&api.name = dlsym(h, "cuDeviceGetName");
    *(void **)&api.total_mem = dlsym(h, "cuDeviceTotalMem_v2");
    if (!api.total_mem) *(void **)&api.total_mem = dlsym(h, "cuDeviceTotalMem");
    *(void **)&api.bus_id = dlsym(h, "cuDeviceGetPCIBusId");
    *(void **)&api.uuid = dlsym(h, "cuDeviceGetUuid_v2");
    if (!api.uuid) *(void **)&api.uuid = dlsym(h, "cuDeviceGetUuid");
    if (!api.init || !api.count || !api.get || !api.total_mem) {
        snprintf(out->gpu_note, sizeof(out->gpu_note), "libcuda.so.1 lacks the device API");
        dlclose(h);
        return;
    }
    cu_result rc = api.init(0);
    int n = 0;
    if (rc != CU_SUCCESS || api.count(&n) != CU_SUCCESS) {
        snprintf(out->gpu_note, sizeof(out->gpu_note), "cuInit failed (CUresult %d): no GPUs", rc);
        dlclose(h);
        return;
    }
    for (int i = 0; i < n && out->n_devices < NODE_MAX_DEVICES; i++) {
        cu_device dev;
        if (api.get(&dev, i) != CU_SUCCESS) continue;
        node_device *d = &out->devices[out->n_devices++];
        memset(d, 0, sizeof(*d));
        snprintf(d->id, sizeof(d->id), "%d", i);
        if (!api.name || api.name(d->model, (int)sizeof(d->model), dev) != CU_SUCCESS)
            ts_strlcpy(d->model, "unknown", sizeof(d->model));
        size_t mem = 0;
        if (api.total_mem(&mem, dev) == CU_SUCCESS) d->memory_bytes = (int64_t)mem;
        if (api.bus_id && api.bus_id(d->bus_id, (int)sizeof(d->bus_id), dev) != CU_SUCCESS)
            d->bus_id[0] = '\0';
        unsigned char u[16];
        if (api.uuid && api.uuid(u, dev) == CU_SUCCESS)
            node_format_uuid(u, d->uuid, sizeof(d->uuid));
    }
    if (n == 0) snprintf(out->gpu_note, sizeof(out->gpu_note), "the CUDA driver sees no device");
    /* libcuda stays loaded: unloading a driver library is not worth the risk. */
}

static int64_t _meminfo(const char *key)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return -1;
    char line[256];
    size_t klen = strlen(key);
    int64_t v = -1;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            v = strtoll(line + klen + 1, NULL, 10) * 1024;
            break;
        }
    }
    fclose(f);
    return v;
}

bool node_detect(const node_opts *o, node_info *out, ts_err *err)
{
    memset(out, 0, sizeof(*out));
    if (gethostname(out->hostname, sizeof(out->hostname) - 1) != 0)
        ts_strlcpy(out->hostname, "localhost", sizeof(out->hostname));
    struct utsname u;
    ts_strlcpy(out->architecture, uname(&u) == 0 ? u.machine : "x86_64", sizeof(out->architecture));

    cpu_set_t set;
    CPU_ZERO(&set);
    out->host_cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
    if (out->host_cpus <= 0) out->host_cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    out->host_mem_bytes = _meminfo("MemTotal");
    if (out->host_cpus <= 0 || out->host_mem_bytes <= 0) {
        ts_err_set(err, "cannot read the host's cpu count or memory (/proc/meminfo)");
        return false;
    }
    int64_t cpu = o->cpu_override_milli > 0 ? o->cpu_override_milli : out->host_cpus * 1000LL;
    int64_t mem = o->mem_override_bytes;
    if (mem <= 0) {
        mem = out->host_mem_bytes - o->mem_reserve_bytes;
        if (mem < out->host_mem_bytes / 4) mem = out->host_mem_bytes / 4; /* small hosts */
    }
    slots_clear(&out->capacity);
    slots_put(&out->capacity, SLOT_CPU, cpu);
    slots_put(&out->capacity, SLOT_MEM, mem);

    if (o->mock_gpus > 0) {
        for (int i = 0; i < o->mock_gpus && i < NODE_MAX_DEVICES; i++) {
            node_device *d = &out->devices[out->n_devices++];
            snprintf(d->id, sizeof(d->id), "%d", i);
            ts_strlcpy(d->model, "mock", sizeof(d->model));
            d->memory_bytes = o->mock_gpu_memory;
            d->mock = true;
            _mock_uuid(o->agent_id, i, d->uuid, sizeof(d->uuid));
        }
        snprintf(out->gpu_note, sizeof(out->gpu_note), "%d mock device(s) from agent.mock_gpus",
                 out->n_devices);
    } else {
        _detect_cuda(out);
    }
    if (out->n_devices > 0) {
        slots_put(&out->capacity, SLOT_CUDA_DEVICE, out->n_devices);
        slots_put(&out->capacity, SLOT_CUDA_SHARES,
                  (int64_t)out->n_devices * SLOT_SHARES_PER_DEVICE);
    }
    return true;
}

/* ---- usage -------------------------------------------------------------------------- */

static unsigned long long prev_busy, prev_total;
static pthread_mutex_t usage_mu = PTHREAD_MUTEX_INITIALIZER;

void node_usage_sample(const char *path, node_usage *out)
{
    memset(out, 0, sizeof(*out));
    FILE *f = fopen("/proc/stat", "r");
    if (f) {
        unsigned long long v[10] = {0};
        if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]) == 8) {
            unsigned long long idle = v[3] + v[4], total = 0;
            for (int i = 0; i < 8; i++)
                total += v[i];
            unsigned long long busy = total - idle;
            pthread_mutex_lock(&usage_mu);
            if (prev_total > 0 && total > prev_total)
                out->cpu_util_pct =
                    100.0 * (double)(busy - prev_busy) / (double)(total - prev_total);
            prev_busy = busy;
            prev_total = total;
            pthread_mutex_unlock(&usage_mu);
        }
        fclose(f);
    }
    out->mem_total_bytes = _meminfo("MemTotal");
    int64_t avail = _meminfo("MemAvailable");
    if (out->mem_total_bytes > 0 && avail >= 0) out->mem_used_bytes = out->mem_total_bytes - avail;
    struct statvfs sv;
    if (path && statvfs(path, &sv) == 0)
        out->disk_free_bytes = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
    double l[1];
    if (getloadavg(l, 1) == 1) out->load1 = l[0];
}
