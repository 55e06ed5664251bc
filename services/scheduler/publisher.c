/* publisher.c: SessionScheduled and SessionUnschedulable (publisher.h). */
#include "services/scheduler/publisher.h"

#include "libcommon/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_predicate(const char *code)
{
    static const char *const preds[] = {"starts_at",  "keypair_concurrency", "keypair_slots",
                                        "user_slots", "project_slots",       "domain_slots",
                                        "max_pending"};
    for (size_t i = 0; i < TS_ARRAY_LEN(preds); i++)
        if (strcmp(code, preds[i]) == 0) return true;
    return false;
}

static void publish(sched_svc *x, const char *sid, const ProtobufCMessage *m)
{
    ts_err err;
    if (!kbus_publish(x->bus, SCHED_TOPIC_SESSION, sid, m, NULL, sid, &err))
        TLOG_ERROR("publish failed", "type=%s error=\"%s\"", m->descriptor->name, err.msg);
}

void sched_publish_scheduled(sched_svc *x, const sched_rec *rec)
{
    Tessera__V1__SessionScheduled m = TESSERA__V1__SESSION_SCHEDULED__INIT;
    m.session_id = (char *)rec->id;
    m.resource_group = (char *)rec->group;
    m.scheduler = (char *)x->producer;
    int nk = rec->nk;
    Tessera__V1__KernelPlacement *kp = ts_calloc((size_t)nk, sizeof(*kp));
    Tessera__V1__KernelPlacement **kpp = ts_calloc((size_t)nk, sizeof(*kpp));
    /* storage for slot amounts and device allocations */
    Tessera__V1__SlotAmount *sa = ts_calloc((size_t)nk * SLOTS_MAX, sizeof(*sa));
    Tessera__V1__SlotAmount **sap = ts_calloc((size_t)nk * SLOTS_MAX, sizeof(*sap));
    char(*amt)[SLOT_FMT_MAX] =
        ts_calloc((size_t)nk * (SLOTS_MAX + SCHED_MAX_DEVICES), SLOT_FMT_MAX);
    Tessera__V1__DeviceAllocation *da = ts_calloc((size_t)nk * SCHED_MAX_DEVICES, sizeof(*da));
    Tessera__V1__DeviceAllocation **dap = ts_calloc((size_t)nk * SCHED_MAX_DEVICES, sizeof(*dap));
    char(*devid)[12] = ts_calloc((size_t)nk * SCHED_MAX_DEVICES, 12);
    int na = 0, nd = 0;
    for (int i = 0; i < nk; i++) {
        const sched_held *h = &rec->k[i];
        Tessera__V1__KernelPlacement *p = &kp[i];
        tessera__v1__kernel_placement__init(p);
        kpp[i] = p;
        p->kernel_id = (char *)h->kernel_id;
        p->agent_id = (char *)h->agent_id;
        p->cluster_role = (char *)h->role;
        p->cluster_idx = h->idx;
        p->slots = &sap[i * SLOTS_MAX];
        for (int id = 0; id < SLOTS_MAX; id++) {
            if (!((h->slots.mask >> id) & 1u)) continue;
            Tessera__V1__SlotAmount *a = &sa[i * SLOTS_MAX + (int)p->n_slots];
            tessera__v1__slot_amount__init(a);
            a->name = (char *)slot_name(id);
            a->amount = slot_format(id, h->slots.v[id], amt[na++], SLOT_FMT_MAX);
            p->slots[p->n_slots++] = a;
        }
        const sched_agent_info *ai = strmap_get(x->agents, h->agent_id);
        p->devices = &dap[i * SCHED_MAX_DEVICES];
        for (int d = 0; d < h->ndev; d++) {
            Tessera__V1__DeviceAllocation *a = &da[nd];
            tessera__v1__device_allocation__init(a);
            int dev = h->dev[d].dev;
            if (ai && dev < ai->ndev && ai->dev_id[dev][0]) {
                a->device_id = (char *)ai->dev_id[dev];
            } else {
                snprintf(devid[nd], 12, "%d", dev);
                a->device_id = devid[nd];
            }
            if (h->whole[d]) {
                a->slot_name = "cuda.device";
                a->amount = "1";
            } else {
                a->slot_name = "cuda.shares";
                a->amount =
                    slot_format(SLOT_CUDA_SHARES, h->dev[d].shares, amt[na++], SLOT_FMT_MAX);
            }
            p->devices[p->n_devices++] = a;
            nd++;
        }
    }
    m.n_kernels = (size_t)nk;
    m.kernels = kpp;
    publish(x, rec->id, &m.base);
    free(kp);
    free(kpp);
    free(sa);
    free(sap);
    free(amt);
    free(da);
    free(dap);
    free(devid);
}

void sched_publish_unschedulable(sched_svc *x, const char *group, const sched_session *s,
                                 const char *code, const char *reason)
{
    Tessera__V1__SessionUnschedulable m = TESSERA__V1__SESSION_UNSCHEDULABLE__INIT;
    m.session_id = (char *)s->id;
    m.reason = (char *)reason;
    m.reason_code = (char *)code;
    char *preds[1] = {(char *)code};
    if (is_predicate(code)) {
        m.n_failed_predicates = 1;
        m.failed_predicates = preds;
    }
    m.attempts = s->attempts;
    m.resource_group = (char *)group;
    atomic_fetch_add(&x->st.unschedulable_published, 1);
    TLOG_DEBUG("unschedulable", "code=%s reason=\"%s\"", code, reason);
    publish(x, s->id, &m.base);
}
