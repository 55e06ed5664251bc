/* usage.c: per-kernel usage on tessera.usage.v1 (usage.h). */
#include "services/agent/usage.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcommon/log.h"
#include "services/agent/gpu_nvml.h"
#include "services/agent/gpu_usage.h"
#include "tessera/v1/usage.pb-c.h"

/* What was reported of one kernel generation. */
typedef struct usage_prev {
    char kernel_id[80];
    int generation;
    int64_t at_ms;      /* end of the last reported interval; 0: nothing yet */
    int64_t started_ms; /* its init's start (the first interval's start) */
    kernel_usage sent;  /* cumulative counters reported so far */
    bool loaded;        /* its dir was looked at */
    bool ending;        /* being destroyed: heartbeats leave it to usage_final */
    bool final;         /* its final sample is out: nothing more */
    bool seen;          /* among the current round's views */
    char gpu[16][32];   /* its GPUs' device ids, as the last view had them */
    int n_gpu;
    int64_t gpu_busy_sent[16]; /* the region's busy_ns per device reported so far */
    uint64_t nvml_seen[16];    /* NVML's last-seen sample timestamp per device, us */
} usage_prev;

/* The host pids of a kernel for NVML; n < 0: unknown (utilisation not measured). */
typedef struct usage_pids {
    int pid[256];
    int n;
} usage_pids;

struct usage_tracker {
    pthread_mutex_t mu;
    char *gpu_conf_dir;
    gpu_nvml *nvml;
    const gpu_host *gpu;
    usage_prev *prev;
    int n, cap;
};

usage_tracker *usage_new(const char *gpu_conf_dir, gpu_nvml *nvml, const gpu_host *gpu)
{
    usage_tracker *u = ts_calloc(1, sizeof(*u));
    u->gpu_conf_dir = gpu_conf_dir ? ts_strdup(gpu_conf_dir) : NULL;
    u->nvml = nvml;
    u->gpu = gpu;
    pthread_mutex_init(&u->mu, NULL);
    return u;
}

void usage_free(usage_tracker *u)
{
    if (!u) return;
    pthread_mutex_destroy(&u->mu);
    free(u->gpu_conf_dir);
    free(u->prev);
    free(u);
}

/* "gen at_ms cpu_usec io_r io_w net_rx net_tx[ n busy_ns_0 .. busy_ns_n-1]": the
 * GPU time part is absent from the marks of agents before it (nothing sent). */
static void _load_gpu(usage_prev *p, const char *rest)
{
    int n, used;
    if (sscanf(rest, "%d%n", &n, &used) != 1 || n < 0 || n > (int)TS_ARRAY_LEN(p->gpu_busy_sent))
        return;
    int64_t v[16];
    for (int i = 0; i < n; i++) {
        rest += used;
        long long b;
        if (sscanf(rest, "%lld%n", &b, &used) != 1 || b < 0) return;
        v[i] = b;
    }
    memcpy(p->gpu_busy_sent, v, sizeof(v[0]) * (size_t)n);
}

static void _load(usage_prev *p, runtime *rt)
{
    if (p->loaded) return;
    p->loaded = true;
    char *text = runtime_usage_mark_load(rt, p->kernel_id);
    long long g, at, cpu, ir, iw, rx, tx;
    int used = 0;
    if (text &&
        sscanf(text, "%lld %lld %lld %lld %lld %lld %lld%n", &g, &at, &cpu, &ir, &iw, &rx, &tx,
               &used) == 7 &&
        g == p->generation) {
        p->at_ms = at;
        p->sent.cpu_usec = cpu;
        p->sent.io_read_bytes = ir;
        p->sent.io_write_bytes = iw;
        p->sent.net_rx_bytes = rx;
        p->sent.net_tx_bytes = tx;
        _load_gpu(p, text + used);
    }
    free(text);
}

static void _save(const usage_prev *p, runtime *rt)
{
    char text[640];
    int n = (int)TS_ARRAY_LEN(p->gpu_busy_sent);
    while (n > 0 && !p->gpu_busy_sent[n - 1])
        n--;
    int len = snprintf(text, sizeof(text),
                       "%d %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64,
                       p->generation, p->at_ms, p->sent.cpu_usec, p->sent.io_read_bytes,
                       p->sent.io_write_bytes, p->sent.net_rx_bytes, p->sent.net_tx_bytes);
    if (n > 0) len += snprintf(text + len, sizeof(text) - (size_t)len, " %d", n);
    for (int i = 0; i < n; i++)
        len += snprintf(text + len, sizeof(text) - (size_t)len, " %" PRId64, p->gpu_busy_sent[i]);
    snprintf(text + len, sizeof(text) - (size_t)len, "\n");
    if (rt && !runtime_usage_mark_save(rt, p->kernel_id, text))
        TLOG_DEBUG("usage mark not saved", "kernel=%s", p->kernel_id);
}

static usage_prev *_prev(usage_tracker *u, const char *id, int generation)
{
    for (int i = 0; i < u->n; i++)
        if (strcmp(u->prev[i].kernel_id, id) == 0 && u->prev[i].generation == generation)
            return &u->prev[i];
    if (u->n == u->cap) {
        u->cap = u->cap ? u->cap * 2 : 16;
        u->prev = ts_realloc(u->prev, sizeof(*u->prev) * (size_t)u->cap);
    }
    usage_prev *p = &u->prev[u->n++];
    memset(p, 0, sizeof(*p));
    ts_strlcpy(p->kernel_id, id, sizeof(p->kernel_id));
    p->generation = generation;
    return p;
}

static int64_t _delta(int64_t now, int64_t *sent)
{
    int64_t d = now - *sent;
    if (d < 0) d = 0; /* a counter that went back (a veth made again): nothing */
    if (now > *sent) *sent = now;
    return d;
}

/* Device i's utilisation from NVML into dev, when measured (gpu_nvml.h): the
 * kernel's pids' samples since the last look. */
static bool _util(const usage_tracker *u, usage_prev *p, int i, const usage_pids *pids,
                  Tessera__V1__GpuDeviceUsage *dev)
{
    if (!u->nvml || !pids || pids->n < 0) return false;
    const char *uuid = gpu_host_uuid(u->gpu, p->gpu[i]);
    double pct;
    if (!uuid || !gpu_nvml_util(u->nvml, uuid, pids->pid, pids->n, &p->nvml_seen[i], &pct))
        return false;
    dev->util_pct = pct;
    dev->util_measured = true;
    return true;
}

/* The kernel's GPUs from its cuda-shim region into m (dev, devp: room for
 * k->n_gpu); nothing when it has none or no process used CUDA yet. GPU time
 * is sent as what the region's counters add to p->gpu_busy_sent, in whole ms
 * (the rest goes with the next sample), as CPU time is. Utilisation from NVML
 * with pids (NULL: not measured), the mean of the measured devices' in
 * m->gpu_util_pct. */
static void _gpu(const usage_tracker *u, usage_prev *p, const usage_kernel *k,
                 const usage_pids *pids, Tessera__V1__KernelUsage *m,
                 Tessera__V1__GpuDeviceUsage *dev, Tessera__V1__GpuDeviceUsage **devp)
{
    if (k->n_gpu > 0) { /* remembered for the final sample, which has no view */
        p->n_gpu = 0;
        for (int i = 0; i < k->n_gpu && i < (int)TS_ARRAY_LEN(p->gpu); i++)
            ts_strlcpy(p->gpu[p->n_gpu++], k->gpu_devices[i], sizeof(p->gpu[0]));
    }
    if (!u->gpu_conf_dir || p->n_gpu <= 0) return;
    char *path = gpu_usage_region_path(u->gpu_conf_dir, k->kernel_id);
    gpu_usage g;
    ts_err err;
    bool ok = gpu_usage_read(path, p->n_gpu, &g, &err);
    free(path);
    if (!ok) {
        TLOG_DEBUG("no GPU figures", "kernel=%s error=\"%s\"", k->kernel_id, err.msg);
        return;
    }
    double util_sum = 0;
    int n_util = 0;
    for (int i = 0; i < g.n_devices; i++) {
        tessera__v1__gpu_device_usage__init(&dev[i]);
        dev[i].device_id = p->gpu[i];
        dev[i].mem_bytes = g.mem_bytes[i];
        dev[i].mem_peak_bytes = g.mem_peak_bytes[i];
        devp[i] = &dev[i];
        m->gpu_mem_bytes += g.mem_bytes[i];
        m->gpu_mem_peak_bytes += g.mem_peak_bytes[i];
        if (_util(u, p, i, pids, &dev[i])) {
            util_sum += dev[i].util_pct;
            n_util++;
        }
        if (g.busy_counted) {
            int64_t d = _delta(g.busy_ns[i], &p->gpu_busy_sent[i]);
            p->gpu_busy_sent[i] -= d % 1000000;
            dev[i].busy_ms = d / 1000000;
            dev[i].busy_measured = true;
            m->gpu_busy_ms += dev[i].busy_ms;
        }
    }
    if (n_util) m->gpu_util_pct = util_sum / n_util;
    m->n_gpu_devices = (size_t)g.n_devices;
    m->gpu_devices = devp;
}

/* Publish what cur adds to p->sent, over p->at_ms (or the start) .. now. */
static bool _emit(const usage_tracker *u, usage_prev *p, kbus *bus, const char *agent_id,
                  const usage_kernel *k, const kernel_usage *cur, const usage_pids *pids,
                  bool final)
{
    int64_t now = ts_now_wall_ms();
    int64_t start = p->at_ms;
    if (!start) start = cur->started_ms ? cur->started_ms : p->started_ms;
    if (!start || start > now) start = now;
    kernel_usage before = p->sent;
    int64_t gpu_before[TS_ARRAY_LEN(p->gpu_busy_sent)];
    memcpy(gpu_before, p->gpu_busy_sent, sizeof(gpu_before));
    Tessera__V1__KernelUsage m = TESSERA__V1__KERNEL_USAGE__INIT;
    int64_t cpu = _delta(cur->cpu_usec, &p->sent.cpu_usec);
    m.kernel_id = (char *)k->kernel_id;
    m.session_id = (char *)k->session_id;
    m.agent_id = (char *)agent_id;
    m.access_key = (char *)k->access_key;
    m.interval_start_ms = start;
    m.interval_end_ms = now;
    m.cpu_used_ms = cpu / 1000;
    p->sent.cpu_usec -= cpu % 1000; /* the rest of a ms goes with the next sample */
    m.cpu_cores = now > start ? (double)cpu / 1000.0 / (double)(now - start) : 0;
    m.mem_bytes = cur->mem_bytes;
    m.mem_peak_bytes = cur->mem_peak_bytes;
    m.io_read_bytes = _delta(cur->io_read_bytes, &p->sent.io_read_bytes);
    m.io_write_bytes = _delta(cur->io_write_bytes, &p->sent.io_write_bytes);
    m.net_rx_bytes = _delta(cur->net_rx_bytes, &p->sent.net_rx_bytes);
    m.net_tx_bytes = _delta(cur->net_tx_bytes, &p->sent.net_tx_bytes);
    m.final = final;
    Tessera__V1__GpuDeviceUsage dev[16];
    Tessera__V1__GpuDeviceUsage *devp[16];
    uint64_t seen_before[TS_ARRAY_LEN(p->nvml_seen)];
    memcpy(seen_before, p->nvml_seen, sizeof(seen_before));
    _gpu(u, p, k, pids, &m, dev, devp);
    ts_err err = {{0}};
    if (!kbus_publish(bus, USAGE_TOPIC, k->kernel_id, &m.base, NULL, k->kernel_id, &err)) {
        TLOG_WARN("usage not published", "kernel=%s error=\"%s\"", k->kernel_id, err.msg);
        p->sent = before; /* the next sample carries it */
        memcpy(p->gpu_busy_sent, gpu_before, sizeof(gpu_before));
        memcpy(p->nvml_seen, seen_before, sizeof(seen_before));
        return false;
    }
    p->at_ms = now;
    return true;
}

int usage_publish(usage_tracker *u, runtime *rt, kbus *bus, const char *agent_id,
                  const usage_kernel *ks, int n)
{
    int published = 0;
    pthread_mutex_lock(&u->mu);
    for (int i = 0; i < u->n; i++)
        u->prev[i].seen = false;
    for (int i = 0; i < n; i++) {
        const usage_kernel *v = &ks[i];
        usage_prev *p = _prev(u, v->kernel_id, v->generation);
        p->seen = true;
        if (!v->running || p->ending || p->final) continue;
        kernel_usage ku;
        ts_err err = {{0}};
        if (!runtime_usage(rt, v->kernel_id, &ku, &err)) {
            TLOG_DEBUG("kernel usage unreadable", "kernel=%s error=\"%s\"", v->kernel_id, err.msg);
            continue;
        }
        _load(p, rt);
        usage_pids pids = {.n = -1};
        if (u->nvml && v->n_gpu > 0)
            pids.n = runtime_pids(rt, v->kernel_id, pids.pid, (int)TS_ARRAY_LEN(pids.pid));
        if (_emit(u, p, bus, agent_id, v, &ku, &pids, false)) {
            _save(p, rt);
            published++;
        }
    }
    /* forget kernels that are gone (terminated or never known) */
    int w = 0;
    for (int i = 0; i < u->n; i++)
        if (u->prev[i].seen) u->prev[w++] = u->prev[i];
    u->n = w;
    pthread_mutex_unlock(&u->mu);
    return published;
}

void usage_track(usage_tracker *u, runtime *rt, const usage_kernel *k)
{
    if (!u) return;
    kernel_usage ku;
    ts_err err;
    bool have = runtime_usage(rt, k->kernel_id, &ku, &err);
    pthread_mutex_lock(&u->mu);
    usage_prev *p = _prev(u, k->kernel_id, k->generation);
    p->seen = true;
    p->ending = true; /* no heartbeat writes into its dir while it is torn down */
    _load(p, rt);
    if (have && ku.started_ms) p->started_ms = ku.started_ms;
    pthread_mutex_unlock(&u->mu);
}

bool usage_final(usage_tracker *u, kbus *bus, const char *agent_id, const usage_kernel *k,
                 const kernel_usage *last)
{
    if (!u) return false;
    pthread_mutex_lock(&u->mu);
    usage_prev *p = _prev(u, k->kernel_id, k->generation);
    p->seen = true;
    bool ok = false;
    if (!p->final) {
        ok = _emit(u, p, bus, agent_id, k, last, NULL, true); /* its processes are gone */
        p->final = ok;
    }
    pthread_mutex_unlock(&u->mu);
    return ok;
}
