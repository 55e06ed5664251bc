/* recovery.c: start-up from Redis and recovery after a Redis loss (recovery.h). */
#include "services/scheduler/recovery.h"

#include "libcommon/log.h"
#include "services/scheduler/agents.h"
#include "services/scheduler/groups.h"
#include "services/scheduler/publisher.h"
#include "services/scheduler/sessions.h"
#include "services/scheduler/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- start-up: agents ---------------------------------------------------------------------- */

typedef struct agents_load {
    sched_svc *x;
    int n;
} agents_load;

/* One agent info record + its capacity in agent:<id> -> the model. */
static void load_agent(void *ctx, const char *id, const sched_agent_info *ai)
{
    agents_load *l = ctx;
    slots_t total, used;
    int32_t dc[32], du[32];
    int ndev;
    ts_err err;
    if (!resv_read_agent(l->x->v, id, &total, &used, &ndev, dc, du, &err)) return;
    bool drained = false;
    if (!resv_read_drained(l->x->v, id, &drained, &err))
        TLOG_WARN("drained mark not read: taken as not drained", "agent=%s error=\"%s\"", id,
                  err.msg);
    sched_agent_msg m;
    memset(&m, 0, sizeof(m));
    ts_strlcpy(m.id, id, sizeof(m.id));
    ts_strlcpy(m.group, ai->group, sizeof(m.group));
    ts_strlcpy(m.arch, ai->arch, sizeof(m.arch));
    slots_clear(&m.total);
    for (int s = 0; s < SLOTS_MAX; s++)
        if (((total.mask >> s) & 1u) && s != SLOT_CUDA_DEVICE && s != SLOT_CUDA_SHARES &&
            strncmp(slot_name(s), "cuda.", 5) != 0)
            slots_put(&m.total, s, total.v[s]);
    m.ndev = ndev > SCHED_MAX_DEVICES ? SCHED_MAX_DEVICES : ndev;
    memcpy(m.dev_cap, dc, sizeof(int32_t) * (size_t)m.ndev);
    m.has_devices = true;
    for (int d = 0; d < m.ndev; d++) {
        if (d < ai->ndev)
            ts_strlcpy(m.dev_id[d], ai->dev_id[d], SCHED_ID_MAX);
        else
            snprintf(m.dev_id[d], SCHED_ID_MAX, "%d", d);
    }
    sched_log_agent(id);
    /* the mark first: the agent enters the model drained */
    if (drained) sched_on_agent_drain(l->x, id, true, "redis");
    sched_on_agent_up(l->x, &m);
    tlog_ctx_clear();
    l->n++;
}

static bool load_agents(sched_svc *x, ts_err *err)
{
    agents_load l = {x, 0};
    if (!sched_store_each_agent_info(x, load_agent, &l, err)) return false;
    TLOG_INFO("agents loaded from Redis", "count=%d", l.n);
    return true;
}

/* ---- start-up: allocations ----------------------------------------------------------------- */

/* "cpu=1000 mem=5" into slots, or "0=50 3=100" into devs. */
static void parse_enc(const char *enc, slots_t *slots, resv_dev *devs, int *ndev)
{
    if (slots) slots_clear(slots);
    if (ndev) *ndev = 0;
    const char *p = enc ? enc : "";
    while (*p) {
        while (*p == ' ')
            p++;
        const char *eq = strchr(p, '=');
        if (!eq) break;
        char name[SLOT_NAME_MAX];
        size_t len = (size_t)(eq - p) < sizeof(name) - 1 ? (size_t)(eq - p) : sizeof(name) - 1;
        memcpy(name, p, len);
        name[len] = '\0';
        char *end;
        long long v = strtoll(eq + 1, &end, 10);
        if (slots) {
            int id;
            if (slot_intern(name, &id, NULL)) slots_put(slots, id, v);
        } else if (*ndev < SCHED_MAX_DEVICES) {
            devs[*ndev] = (resv_dev){atoi(name), (int32_t)v};
            (*ndev)++;
        }
        p = end;
    }
}

/* "kp:AK user:U project:P domain:D" into the record's scopes. */
static void parse_usage(const char *usage, sched_rec *rec)
{
    static const char *const tags[RESV_SCOPES] = {"kp:", "user:", "project:", "domain:"};
    char buf[SCHED_ID_MAX * 5];
    ts_strlcpy(buf, usage ? usage : "", sizeof(buf));
    char *save = NULL;
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
        for (int sc = 0; sc < RESV_SCOPES; sc++)
            if (strncmp(tok, tags[sc], strlen(tags[sc])) == 0)
                ts_strlcpy(rec->scope[sc], tok + strlen(tags[sc]), SCHED_ID_MAX);
}

/* One alloc:<kernel> record -> a kernel of its session's record. */
static void load_alloc(void *ctx, const sched_alloc_rec *a)
{
    sched_svc *x = ctx;
    sched_rec *rec = sched_rec_get_or_new(x, a->session_id, "");
    if (rec->state != REC_HELD) atomic_fetch_add(&x->st.held_sessions, 1);
    rec->state = REC_HELD;
    rec->k = ts_realloc(rec->k, sizeof(*rec->k) * (size_t)(rec->nk + 1));
    sched_held *h = &rec->k[rec->nk++];
    memset(h, 0, sizeof(*h));
    ts_strlcpy(h->kernel_id, a->kernel_id, sizeof(h->kernel_id));
    ts_strlcpy(h->agent_id, a->agent_id, sizeof(h->agent_id));
    parse_enc(a->slots, &h->slots, NULL, NULL);
    parse_enc(a->devs, NULL, h->dev, &h->ndev);
    for (int d = 0; d < h->ndev; d++)
        h->whole[d] = slots_get(&h->slots, SLOT_CUDA_DEVICE) > 0 &&
                      h->dev[d].shares == SLOT_SHARES_PER_DEVICE;
    ts_strlcpy(h->role, rec->nk == 1 ? "main" : "sub", sizeof(h->role));
    h->idx = rec->nk - 1;
    parse_usage(a->usage, rec);
}

/* What Redis recorded must fit the agent's capacity in the model (commit
 * asserts it): kernel i and the ones before it on the same agent. */
static bool fits_model(const sched_rec *rec, int i, const sched_agent *a)
{
    slots_t sum = a->used;
    int32_t dev[SCHED_MAX_DEVICES];
    memcpy(dev, a->dev_used, sizeof(dev));
    for (int j = 0; j <= i; j++) {
        if (strcmp(rec->k[j].agent_id, a->id) != 0) continue;
        ts_err err;
        if (!slots_add(&sum, &rec->k[j].slots, &err)) return false;
        for (int d = 0; d < rec->k[j].ndev; d++) {
            int dv = rec->k[j].dev[d].dev;
            if (dv < 0 || dv >= a->ndev) return false;
            dev[dv] += rec->k[j].dev[d].shares;
            if (dev[dv] > a->dev_cap[dv]) return false;
        }
    }
    return slots_le(&sum, &a->total);
}

/* A session holding slots per Redis -> an allocation in the engine. */
static void adopt_rec(sched_svc *x, sched_rec *rec)
{
    sched_agent_info *ai = rec->nk ? strmap_get(x->agents, rec->k[0].agent_id) : NULL;
    if (ai) ts_strlcpy(rec->group, ai->group, sizeof(rec->group));
    sched_group *g = ai ? sched_engine_group(x->e, ai->group) : NULL;
    if (!g) return;
    sched_session *s = sched_session_new(rec->id, rec->nk);
    ts_strlcpy(s->access_key, rec->scope[RESV_SCOPE_KEYPAIR], sizeof(s->access_key));
    ts_strlcpy(s->user_id, rec->scope[RESV_SCOPE_USER], sizeof(s->user_id));
    ts_strlcpy(s->project_id, rec->scope[RESV_SCOPE_PROJECT], sizeof(s->project_id));
    ts_strlcpy(s->domain, rec->scope[RESV_SCOPE_DOMAIN], sizeof(s->domain));
    sched_kplace *k = ts_calloc((size_t)rec->nk, sizeof(*k));
    bool ok = true;
    for (int i = 0; i < rec->nk && ok; i++) {
        sched_agent *a = sched_group_agent(g, rec->k[i].agent_id);
        ok = a && fits_model(rec, i, a);
    }
    for (int i = 0; i < rec->nk && ok; i++) {
        ts_strlcpy(s->kernels[i].kernel_id, rec->k[i].kernel_id, SCHED_ID_MAX);
        s->kernels[i].slots = rec->k[i].slots;
        k[i].kernel = &s->kernels[i];
        k[i].pick.agent = sched_group_agent(g, rec->k[i].agent_id);
        ok = k[i].pick.agent != NULL;
        k[i].pick.ndev = rec->k[i].ndev;
        for (int d = 0; ok && d < rec->k[i].ndev; d++)
            k[i].pick.dev[d] = (sched_devalloc){(uint8_t)rec->k[i].dev[d].dev, rec->k[i].whole[d],
                                                rec->k[i].dev[d].shares};
    }
    ts_err err;
    if (!ok || !sched_session_finish(s, &err) ||
        !sched_engine_adopt(x->e, rec->group, s, k, rec->nk, &err))
        TLOG_WARN("allocation not adopted into the model", "");
    free(k);
    sched_session_free(s);
}

static bool load_allocs(sched_svc *x, ts_err *err)
{
    size_t n;
    if (!sched_store_each_alloc(x, load_alloc, x, &n, err)) return false;

    /* adopt, or release what ended while nobody was listening */
    size_t nrec = strmap_len(x->recs), i = 0, pos = 0;
    sched_rec **recs = ts_calloc(nrec + 1, sizeof(*recs));
    const char **ids = ts_calloc(nrec + 1, sizeof(*ids));
    const char *id;
    void *v;
    while (strmap_next(x->recs, &pos, &id, &v)) {
        recs[i] = v;
        ids[i] = recs[i]->id;
        i++;
    }
    bool *dead = ts_calloc(nrec + 1, sizeof(*dead));
    bool ok = sched_store_ended(x, ids, nrec, dead, err);
    int released = 0;
    for (i = 0; ok && i < nrec; i++) {
        sched_log_session(recs[i]->id);
        adopt_rec(x, recs[i]);
        if (dead[i]) {
            sched_release_rec(x, recs[i]);
            released++;
        }
    }
    tlog_ctx_clear();
    free(ids);
    free(recs);
    free(dead);
    TLOG_INFO("allocations loaded from Redis", "kernels=%zu sessions=%zu released_ended=%d", n,
              nrec, released);
    return ok;
}

/* ---- start-up: pending records ------------------------------------------------------------- */

typedef enum pending_fate { PENDING_QUEUED, PENDING_REPUBLISHED, PENDING_DROPPED } pending_fate;

/* Reserved, but SessionScheduled may not have reached the bus: the roles and
 * indexes from the event, then SessionScheduled again. */
static void republish(sched_svc *x, sched_rec *rec, Tessera__V1__SessionEnqueued *m)
{
    for (int k = 0; k < rec->nk; k++)
        for (size_t j = 0; j < m->n_kernels; j++)
            if (strcmp(m->kernels[j]->kernel_id, rec->k[k].kernel_id) == 0) {
                ts_strlcpy(rec->k[k].role,
                           m->kernels[j]->cluster_role[0] ? m->kernels[j]->cluster_role : "main",
                           sizeof(rec->k[k].role));
                rec->k[k].idx = m->kernels[j]->cluster_idx;
            }
    if (rec->enq) tessera__v1__session_enqueued__free_unpacked(rec->enq, NULL);
    rec->enq = m;
    if (!rec->group[0]) ts_strlcpy(rec->group, m->resource_group, sizeof(rec->group));
    sched_publish_scheduled(x, rec);
    sched_store_unpersist_later(x, rec->id);
}

typedef struct held_of {
    sched_svc *x;
    const char *session_id;
} held_of;

static void load_alloc_of(void *ctx, const sched_alloc_rec *a)
{
    held_of *h = ctx;
    if (strcmp(a->session_id, h->session_id) == 0) load_alloc(h->x, a);
}

/* A session this instance does not know that holds slots per Redis (another
 * instance reserved it, and may have died before the bus acknowledged its
 * SessionScheduled): its allocations as a record, adopted into the model.
 * *rec NULL when it holds none. */
static bool adopt_held(sched_svc *x, const char *sid, sched_rec **rec, ts_err *err)
{
    *rec = NULL;
    bool held;
    if (!sched_store_exists(x, "sess:", sid, &held, err)) return false;
    if (!held) return true;
    held_of h = {x, sid};
    if (!sched_store_each_alloc(x, load_alloc_of, &h, NULL, err)) return false;
    *rec = strmap_get(x->recs, sid);
    if (*rec) adopt_rec(x, *rec);
    return true;
}

/* One pending record of a session that has not ended. */
static bool load_one_pending(sched_svc *x, const char *sid, pending_fate *fate, ts_err *err)
{
    sched_rec *rec = strmap_get(x->recs, sid);
    if (!rec && !adopt_held(x, sid, &rec, err)) return false;
    Tessera__V1__SessionEnqueued *m;
    if (!sched_store_get_pending(x, sid, &m, err)) return false;
    if (!m) {
        TLOG_WARN("pending record undecodable: dropped", "");
        sched_store_unpersist_later(x, sid);
        *fate = PENDING_DROPPED;
        return true;
    }
    if (rec && rec->state == REC_HELD) {
        republish(x, rec, m);
        *fate = PENDING_REPUBLISHED;
        return true;
    }
    sched_on_enqueued(x, m, ts_now_mono_us());
    *fate = PENDING_QUEUED;
    return true;
}

/* Known here already: queued, or placed by this instance (its record has
 * the event; adopted allocations have none until republished). */
static bool known(sched_svc *x, const char *sid)
{
    sched_rec *rec = strmap_get(x->recs, sid);
    return rec && (rec->state == REC_PENDING || rec->enq);
}

bool sched_recovery_take_pending(sched_svc *x, bool (*owns)(sched_svc *x, const char *id),
                                 int *taken, ts_err *err)
{
    *taken = 0;
    char **all;
    size_t nall;
    if (!sched_store_pending_ids(x, &all, &nall, err)) return false;
    const char **sids = ts_calloc(nall + 1, sizeof(*sids));
    size_t n = 0;
    for (size_t i = 0; i < nall; i++)
        if (owns(x, all[i]) && !known(x, all[i])) sids[n++] = all[i];
    bool *dead = ts_calloc(n + 1, sizeof(*dead));
    bool ok = n == 0 || sched_store_ended(x, sids, n, dead, err);
    int count[3] = {0, 0, 0};
    for (size_t i = 0; ok && i < n; i++) {
        sched_log_session(sids[i]);
        pending_fate fate = PENDING_DROPPED;
        if (dead[i])
            sched_store_unpersist_later(x, sids[i]);
        else
            ok = load_one_pending(x, sids[i], &fate, err);
        if (ok) count[fate]++;
    }
    tlog_ctx_clear();
    free(dead);
    free(sids);
    sched_store_free_ids(all, nall);
    sched_store_unpersist_flush(x);
    *taken = count[PENDING_QUEUED] + count[PENDING_REPUBLISHED];
    if (n)
        TLOG_INFO("pending sessions taken from Redis",
                  "queued=%d republished_scheduled=%d dropped=%d", count[PENDING_QUEUED],
                  count[PENDING_REPUBLISHED], count[PENDING_DROPPED]);
    return ok;
}

bool sched_recovery_load(sched_svc *x, ts_err *err)
{
    if (!sched_store_set_alive(x, err) || !load_agents(x, err) || !load_allocs(x, err))
        return false;
    /* adoption added what agent:* already counts: take Redis's occupancy as it is;
     * the pending records come once the group gave this instance partitions
     * (ownership.h) */
    sched_resync_all(x);
    return true;
}

/* ---- Redis loss ---------------------------------------------------------------------------- */

/* Redis has the scheduler's data again: write back what only this instance knows. */
static void recover(sched_svc *x)
{
    ts_err err;
    x->redis_lost = false;
    if (!sched_store_set_alive(x, &err)) {
        x->redis_lost = true;
        return;
    }
    int pending = 0;
    size_t pos = 0;
    const char *id;
    void *v;
    while (strmap_next(x->recs, &pos, &id, &v)) {
        sched_rec *rec = v;
        if (rec->state == REC_PENDING && rec->enq && sched_store_put_pending(x, rec->enq, &err))
            pending++;
    }
    sched_rewrite_agents(x);
    sched_resync_all(x);
    sched_mark_all_dirty(x);
    TLOG_INFO("Redis data back: scheduling resumes", "pending_records_rewritten=%d", pending);
}

/* Occupancy rebuilt from this instance's model (scheduler.rebuild_after). */
static void self_rebuild(sched_svc *x)
{
    size_t na = strmap_len(x->agents), nr = strmap_len(x->recs);
    resv_agent *ra = ts_calloc(na + 1, sizeof(*ra));
    resv_session *rs = ts_calloc(nr + 1, sizeof(*rs));
    resv_kernel **rk = ts_calloc(nr + 1, sizeof(*rk));
    int ia = 0, is = 0;
    size_t pos = 0;
    const char *id;
    void *v;
    while (strmap_next(x->agents, &pos, &id, &v)) {
        sched_agent_info *ai = v;
        sched_group *g = sched_engine_group(x->e, ai->group);
        sched_agent *a = g ? sched_group_agent(g, id) : NULL;
        if (a) ra[ia++] = (resv_agent){a->id, &a->total, a->ndev, a->dev_cap, a->schedulable};
    }
    pos = 0;
    while (strmap_next(x->recs, &pos, &id, &v)) {
        sched_rec *rec = v;
        if (rec->state != REC_HELD || rec->nk == 0) continue;
        rk[is] = ts_calloc((size_t)rec->nk, sizeof(resv_kernel));
        for (int k = 0; k < rec->nk; k++)
            rk[is][k] = (resv_kernel){rec->k[k].kernel_id, rec->k[k].agent_id, &rec->k[k].slots,
                                      rec->k[k].ndev, rec->k[k].dev};
        rs[is] = (resv_session){
            rec->id, {rec->scope[0], rec->scope[1], rec->scope[2], rec->scope[3]}, rec->nk, rk[is]};
        is++;
    }
    ts_err err;
    if (resv_rebuild(x->v, ra, ia, rs, is, &err)) {
        atomic_fetch_add(&x->st.rebuilds, 1);
        TLOG_WARN("occupancy rebuilt from this scheduler's model", "agents=%d sessions=%d", ia, is);
    } else {
        TLOG_ERROR("occupancy rebuild failed", "error=\"%s\"", err.msg);
    }
    for (int i = 0; i < is; i++)
        free(rk[i]);
    free(rk);
    free(rs);
    free(ra);
}

void sched_recovery_check_loss(sched_svc *x)
{
    ts_err err;
    bool alive;
    if (!sched_store_exists(x, "sched:alive", NULL, &alive, &err))
        return; /* Redis down: nothing to decide now */
    if (alive && !x->redis_lost) return;
    if (!x->redis_lost) {
        x->redis_lost = true;
        x->lost_since_ms = ts_now_mono_ms();
        atomic_fetch_add(&x->st.redis_losses, 1);
        TLOG_WARN("Redis lost the scheduler's data: waiting for the occupancy rebuild",
                  "rebuild_after_ms=%lld", (long long)sched_cfg.rebuild_after_ms);
    }
    bool locked = false;
    if (!sched_store_exists(x, "rebuild", NULL, &locked, &err) || locked) return;
    /* rebuilt by the registry when a known agent is back */
    bool back = strmap_len(x->agents) == 0;
    size_t pos = 0;
    const char *id;
    void *v;
    if (!back && strmap_next(x->agents, &pos, &id, &v) &&
        !sched_store_exists(x, "agent:", id, &back, &err))
        return;
    if (!back && sched_cfg.rebuild_after_ms > 0 &&
        ts_now_mono_ms() - x->lost_since_ms >= sched_cfg.rebuild_after_ms) {
        self_rebuild(x);
        back = true;
    }
    if (back) recover(x);
}
