/* agents.c: agent events -> the model, capacity to Redis, occupancy resync
 * (agents.h). */
#include "services/scheduler/agents.h"

#include "libcommon/log.h"
#include "services/scheduler/groups.h"
#include "services/scheduler/store.h"

#include <stdlib.h>
#include <string.h>

static sched_agent *find_agent(sched_svc *x, const char *id, sched_group **gout)
{
    sched_agent_info *ai = strmap_get(x->agents, id);
    if (!ai) return NULL;
    sched_group *g = sched_engine_group(x->e, ai->group);
    if (gout) *gout = g;
    return g ? sched_group_agent(g, id) : NULL;
}

static void write_capacity(sched_svc *x, const sched_agent *a)
{
    if (!sched_cfg.write_agent_capacity || x->redis_lost) return;
    resv_agent ra = {a->id, &a->total, a->ndev, a->dev_cap, a->schedulable};
    ts_err err;
    if (!resv_set_agent(x->v, &ra, &err))
        TLOG_WARN("agent capacity not written to Redis", "error=\"%s\"", err.msg);
}

void sched_on_agent_up(sched_svc *x, const sched_agent_msg *m)
{
    sched_agent_info *ai = strmap_get(x->agents, m->id);
    bool is_new = ai == NULL;
    if (ai && strcmp(ai->group, m->group) != 0) {
        /* moved to another resource group: its occupancy goes with it */
        sched_group *old = ai->group[0] ? sched_engine_group(x->e, ai->group) : NULL;
        if (old) TS_IGNORE(sched_group_remove_agent(old, m->id)); /* false: not there anyway */
        if (ai->group[0]) TLOG_INFO("agent moved", "from=%s to=%s", ai->group, m->group);
        is_new = true;
    }
    if (!sched_ensure_group(x, m->group)) return;
    if (!ai) {
        ai = ts_calloc(1, sizeof(*ai));
        strmap_put(x->agents, m->id, ai);
        atomic_fetch_add(&x->st.agents, 1);
    }
    ts_strlcpy(ai->group, m->group, sizeof(ai->group));
    /* (a group of "" is a drain mark that came before the agent: not a move) */
    if (m->arch[0]) ts_strlcpy(ai->arch, m->arch, sizeof(ai->arch));
    if (!ai->arch[0]) ts_strlcpy(ai->arch, sched_cfg.default_architecture, sizeof(ai->arch));
    sched_group *g = sched_engine_group(x->e, m->group);
    sched_agent *a = sched_group_agent(g, m->id);
    sched_agent_spec spec = {
        .id = m->id, .arch = ai->arch, .total = m->total, .schedulable = !ai->drained};
    if (m->has_devices || !a) {
        spec.ndev = m->ndev;
        memcpy(spec.dev_cap, m->dev_cap, sizeof(spec.dev_cap));
        ai->ndev = m->ndev;
        memcpy(ai->dev_id, m->dev_id, sizeof(ai->dev_id));
    } else {
        spec.ndev = a->ndev;
        memcpy(spec.dev_cap, a->dev_cap, sizeof(spec.dev_cap));
    }
    bool changed = is_new || !a || ai->stopped || a->schedulable == ai->drained;
    slots_t before_total;
    int32_t before_cap[SCHED_MAX_DEVICES];
    int before_ndev = 0;
    if (a) {
        before_total = a->total;
        before_ndev = a->ndev;
        memcpy(before_cap, a->dev_cap, sizeof(before_cap));
    }
    ts_err err;
    if (!sched_group_set_agent(g, &spec, &err)) {
        TLOG_WARN("agent capacity not applied", "error=\"%s\"", err.msg);
        return;
    }
    a = sched_group_agent(g, m->id);
    a->drained = ai->drained;
    if (!changed)
        changed = !slots_equal(&before_total, &a->total) || before_ndev != a->ndev ||
                  memcmp(before_cap, a->dev_cap, sizeof(int32_t) * (size_t)a->ndev) != 0;
    ai->stopped = false;
    if (!changed) return;
    TLOG_INFO("agent up", "group=%s arch=%s gpus=%d", m->group, ai->arch, a->ndev);
    write_capacity(x, a);
    /* a failure is logged; the next change or a Redis recovery writes it again */
    TS_IGNORE(sched_store_put_agent_info(x, m->id, ai));
    /* placed by anyone (a failure is logged; the periodic resync comes back to it) */
    if (is_new && !x->loading) TS_IGNORE(sched_resync_agent(x, m->id));
    sched_mark_dirty(x, m->group);
}

void sched_on_agent_down(sched_svc *x, const char *agent_id, const char *reason)
{
    sched_group *g = NULL;
    sched_agent *a = find_agent(x, agent_id, &g);
    sched_agent_info *ai = strmap_get(x->agents, agent_id);
    if (!a || !ai) return;
    ai->stopped = true;
    sched_group_set_schedulable(g, a, false);
    write_capacity(x, a);
    TLOG_INFO("agent stopped: not schedulable", "reason=\"%s\"", reason);
}

void sched_on_agent_drain(sched_svc *x, const char *agent_id, bool drained, const char *by)
{
    sched_agent_info *ai = strmap_get(x->agents, agent_id);
    if (!ai) {
        if (!drained) return;
        /* Before its first announcement (events of two producers): the mark
         * waits for it. */
        ai = ts_calloc(1, sizeof(*ai));
        strmap_put(x->agents, agent_id, ai);
        atomic_fetch_add(&x->st.agents, 1);
    }
    bool was = ai->drained;
    ai->drained = drained;
    sched_group *g = NULL;
    sched_agent *a = ai->group[0] ? find_agent(x, agent_id, &g) : NULL;
    if (a && g) {
        a->drained = drained;
        bool on = !drained && !ai->stopped;
        if (a->schedulable != on) sched_group_set_schedulable(g, a, on);
        write_capacity(x, a);
        sched_mark_dirty(x, ai->group);
    }
    if (was != drained)
        TLOG_INFO(drained ? "agent drained: not schedulable" : "agent undrained", "by=%s known=%s",
                  by && by[0] ? by : "-", a ? "yes" : "no");
}

bool sched_resync_agent(sched_svc *x, const char *agent_id)
{
    sched_group *g = NULL;
    sched_agent *a = find_agent(x, agent_id, &g);
    if (!a) return false;
    slots_t total, used;
    int ndev;
    int32_t dc[32], du[32];
    ts_err err;
    if (!resv_read_agent(x->v, agent_id, &total, &used, &ndev, dc, du, &err)) {
        TLOG_DEBUG("agent not resynced", "error=\"%s\"", err.msg);
        return false;
    }
    if (slots_equal(&used, &a->used) &&
        memcmp(du, a->dev_used, sizeof(int32_t) * (size_t)a->ndev) == 0)
        return true;
    /* Redis may list slots the model leaves out, and the other way round. */
    slots_t u;
    slots_clear(&u);
    for (int id = 0; id < SLOTS_MAX; id++)
        if (((a->total.mask | a->used.mask) >> id) & 1u) slots_put(&u, id, slots_get(&used, id));
    if (!sched_group_set_usage(g, a, &u, du, &err)) {
        TLOG_WARN("agent occupancy from Redis not applied", "error=\"%s\"", err.msg);
        return false;
    }
    atomic_fetch_add(&x->st.resyncs, 1);
    return true;
}

void sched_resync_all(sched_svc *x)
{
    size_t pos = 0;
    const char *id;
    void *v;
    while (strmap_next(x->agents, &pos, &id, &v)) {
        sched_log_agent(id);
        uint64_t before = atomic_load(&x->st.resyncs);
        if (sched_resync_agent(x, id) && atomic_load(&x->st.resyncs) != before)
            sched_mark_dirty(x, ((sched_agent_info *)v)->group);
    }
    tlog_ctx_clear();
}

void sched_rewrite_agents(sched_svc *x)
{
    size_t pos = 0;
    const char *id;
    void *v;
    while (strmap_next(x->agents, &pos, &id, &v)) {
        sched_log_agent(id);
        sched_agent_info *ai = v;
        sched_agent *a = find_agent(x, id, NULL);
        if (a) write_capacity(x, a);
        TS_IGNORE(sched_store_put_agent_info(x, id, ai)); /* logged; written again on change */
    }
    tlog_ctx_clear();
}
