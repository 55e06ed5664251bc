/* heartbeat.c: AgentHeartbeat and KernelUsage every interval (heartbeat.h). */
#include "services/agent/heartbeat.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libcommon/log.h"
#include "services/agent/usage.h"

struct heartbeat {
    heartbeat_opts o;
    node_proto np;
    usage_tracker *usage;
    uint64_t seq;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
};

void node_proto_fill(const node_info *n, node_proto *p)
{
    memset(p, 0, sizeof(*p));
    for (int id = 0; id < slot_count() && p->n_slots < SLOTS_MAX; id++) {
        if (!((n->capacity.mask >> id) & 1u)) continue;
        size_t i = p->n_slots++;
        tessera__v1__slot_amount__init(&p->slots[i]);
        p->slots[i].name = (char *)slot_name(id);
        p->slots[i].amount = slot_format(id, n->capacity.v[id], p->amounts[i], SLOT_FMT_MAX);
        p->slotp[i] = &p->slots[i];
    }
    for (int i = 0; i < n->n_devices; i++) {
        const node_device *d = &n->devices[i];
        Tessera__V1__DeviceInfo *m = &p->devices[i];
        tessera__v1__device_info__init(m);
        m->device_id = (char *)d->id;
        m->slot_name = "cuda.device";
        m->model = (char *)d->model;
        m->memory_bytes = d->memory_bytes;
        m->capacity = "1";
        m->shares_capacity =
            slot_format(SLOT_CUDA_SHARES, SLOT_SHARES_PER_DEVICE, p->shares[i], SLOT_FMT_MAX);
        m->mock = d->mock;
        m->bus_id = (char *)d->bus_id;
        m->numa_node = -1;
        p->devicep[i] = m;
    }
    p->n_devices = (size_t)n->n_devices;
}

/* A kernel's slot amounts as messages (at most SLOTS_MAX), the text of each
 * in amt; returns how many. */
static size_t _slot_amounts(const slots_t *slots, Tessera__V1__SlotAmount *sa,
                            Tessera__V1__SlotAmount **sap, char (*amt)[SLOT_FMT_MAX])
{
    size_t ns = 0;
    for (int id = 0; id < slot_count() && ns < SLOTS_MAX; id++) {
        if (!((slots->mask >> id) & 1u)) continue;
        Tessera__V1__SlotAmount *s = &sa[ns];
        tessera__v1__slot_amount__init(s);
        s->name = (char *)slot_name(id);
        s->amount = slot_format(id, slots->v[id], amt[ns], SLOT_FMT_MAX);
        sap[ns] = s;
        ns++;
    }
    return ns;
}

/* A kernel's device parts as messages (v->n_devices of them). */
static void _device_parts(const kernel_view *v, Tessera__V1__DeviceAllocation *da,
                          Tessera__V1__DeviceAllocation **dap)
{
    for (int d = 0; d < v->n_devices; d++) {
        Tessera__V1__DeviceAllocation *x = &da[d];
        tessera__v1__device_allocation__init(x);
        x->device_id = (char *)v->devices[d].device_id;
        x->slot_name = (char *)v->devices[d].slot_name;
        x->amount = (char *)v->devices[d].amount;
        dap[d] = x;
    }
}

static void _beat(heartbeat *hb)
{
    kernel_view *views = NULL;
    int n = kernels_snapshot(hb->o.ks, false, &views);

    Tessera__V1__AgentHeartbeat m = TESSERA__V1__AGENT_HEARTBEAT__INIT;
    m.agent_id = (char *)hb->o.agent_id;
    m.resource_group = (char *)hb->o.resource_group;
    m.seq = ++hb->seq;
    m.interval_ms = hb->o.interval_ms;
    m.n_slots = hb->np.n_slots;
    m.slots = hb->np.slotp;
    m.n_devices = hb->np.n_devices;
    m.devices = hb->np.devicep;

    Tessera__V1__AgentHeartbeat__Allocation *allocs = ts_calloc((size_t)n + 1, sizeof(*allocs));
    Tessera__V1__AgentHeartbeat__Allocation **allocp = ts_calloc((size_t)n + 1, sizeof(*allocp));
    Tessera__V1__AgentHeartbeat__Kernel *kerns = ts_calloc((size_t)n + 1, sizeof(*kerns));
    Tessera__V1__AgentHeartbeat__Kernel **kernp = ts_calloc((size_t)n + 1, sizeof(*kernp));
    /* per kernel: up to SLOTS_MAX slot amounts and KERNEL_MAX_DEVICES device parts */
    Tessera__V1__SlotAmount *sa = ts_calloc((size_t)n * SLOTS_MAX + 1, sizeof(*sa));
    Tessera__V1__SlotAmount **sap = ts_calloc((size_t)n * SLOTS_MAX + 1, sizeof(*sap));
    char(*amt)[SLOT_FMT_MAX] = ts_calloc((size_t)n * SLOTS_MAX + 1, SLOT_FMT_MAX);
    Tessera__V1__DeviceAllocation *da = ts_calloc((size_t)n * KERNEL_MAX_DEVICES + 1, sizeof(*da));
    Tessera__V1__DeviceAllocation **dap =
        ts_calloc((size_t)n * KERNEL_MAX_DEVICES + 1, sizeof(*dap));
    size_t n_alloc = 0;
    for (int i = 0; i < n; i++) {
        const kernel_view *v = &views[i];
        Tessera__V1__AgentHeartbeat__Kernel *k = &kerns[i];
        tessera__v1__agent_heartbeat__kernel__init(k);
        k->kernel_id = (char *)v->kernel_id;
        k->session_id = (char *)v->session_id;
        k->status = (char *)v->status;
        k->container_id = strcmp(v->status, "pulling") == 0 ? "" : (char *)v->kernel_id;
        kernp[i] = k;
        if (slots_is_zero(&v->slots) && v->n_devices == 0) continue;
        Tessera__V1__AgentHeartbeat__Allocation *a = &allocs[n_alloc];
        tessera__v1__agent_heartbeat__allocation__init(a);
        a->kernel_id = (char *)v->kernel_id;
        a->session_id = (char *)v->session_id;
        size_t base = (size_t)i * SLOTS_MAX;
        a->n_slots = _slot_amounts(&v->slots, &sa[base], &sap[base], &amt[base]);
        a->slots = &sap[base];
        size_t dbase = (size_t)i * KERNEL_MAX_DEVICES;
        _device_parts(v, &da[dbase], &dap[dbase]);
        a->n_devices = (size_t)v->n_devices;
        a->devices = &dap[dbase];
        allocp[n_alloc++] = a;
    }
    m.n_allocations = n_alloc;
    m.allocations = allocp;
    m.n_kernels = (size_t)n;
    m.kernels = kernp;

    node_usage nu;
    node_usage_sample(hb->o.state_dir, &nu);
    Tessera__V1__AgentHeartbeat__Usage u = TESSERA__V1__AGENT_HEARTBEAT__USAGE__INIT;
    u.cpu_util_pct = nu.cpu_util_pct;
    u.mem_used_bytes = nu.mem_used_bytes;
    u.mem_total_bytes = nu.mem_total_bytes;
    u.disk_free_bytes = nu.disk_free_bytes;
    u.load1 = nu.load1;
    m.usage = &u;

    ts_err err = {{0}};
    if (!kbus_publish(hb->o.bus, AGENT_TOPIC, hb->o.agent_id, &m.base, NULL, hb->o.agent_id, &err))
        TLOG_WARN("heartbeat not published", "seq=%llu error=\"%s\"", (unsigned long long)m.seq,
                  err.msg);
    else
        TLOG_DEBUG("heartbeat", "seq=%llu kernels=%d", (unsigned long long)m.seq, n);
    usage_kernel *uks = ts_calloc((size_t)n + 1, sizeof(*uks));
    for (int i = 0; i < n; i++)
        kernel_view_usage(&views[i], &uks[i]);
    usage_publish(hb->usage, hb->o.rt, hb->o.bus, hb->o.agent_id, uks, n);
    free(uks);

    free(allocs);
    free(allocp);
    free(kerns);
    free(kernp);
    free(sa);
    free(sap);
    free(amt);
    free(da);
    free(dap);
    kernel_views_free(views);
}

static void *_run(void *arg)
{
    heartbeat *hb = arg;
    tlog_ctx_agent(hb->o.agent_id); /* this thread's lines are the agent's */
    pthread_mutex_lock(&hb->mu);
    while (!hb->stop) {
        pthread_mutex_unlock(&hb->mu);
        _beat(hb);
        pthread_mutex_lock(&hb->mu);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ns = ts.tv_nsec + (int64_t)hb->o.interval_ms * 1000000LL;
        ts.tv_sec += (time_t)(ns / 1000000000LL);
        ts.tv_nsec = (long)(ns % 1000000000LL);
        while (!hb->stop && pthread_cond_timedwait(&hb->cv, &hb->mu, &ts) == 0) {
        }
    }
    pthread_mutex_unlock(&hb->mu);
    return NULL;
}

heartbeat *heartbeat_start(const heartbeat_opts *o, ts_err *err)
{
    heartbeat *hb = ts_calloc(1, sizeof(*hb));
    hb->o = *o;
    if (hb->o.interval_ms < 100) hb->o.interval_ms = 100;
    node_proto_fill(o->node, &hb->np);
    hb->usage = o->usage;
    pthread_mutex_init(&hb->mu, NULL);
    pthread_cond_init(&hb->cv, NULL);
    int rc = pthread_create(&hb->thread, NULL, _run, hb);
    if (rc != 0) {
        ts_err_set(err, "heartbeat thread: %s", strerror(rc));
        free(hb);
        return NULL;
    }
    return hb;
}

void heartbeat_stop(heartbeat *hb)
{
    if (!hb) return;
    pthread_mutex_lock(&hb->mu);
    hb->stop = true;
    pthread_cond_broadcast(&hb->cv);
    pthread_mutex_unlock(&hb->mu);
    pthread_join(hb->thread, NULL);
    pthread_cond_destroy(&hb->cv);
    pthread_mutex_destroy(&hb->mu);
    free(hb);
}
