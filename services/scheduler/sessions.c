/* sessions.c: enqueue, end -> release, the passes with batched reservations
 * (sessions.h). */
#include "services/scheduler/sessions.h"

#include "libcommon/log.h"
#include "services/scheduler/agents.h"
#include "services/scheduler/groups.h"
#include "services/scheduler/publisher.h"
#include "services/scheduler/shared_limits.h"
#include "services/scheduler/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Enqueued -------------------------------------------------------------------------------- */

/* A sched_session from an Enqueued event (NULL with err when a slot is invalid). */
static sched_session *session_from_enqueued(const Tessera__V1__SessionEnqueued *m, ts_err *err)
{
    if (m->n_kernels == 0 || m->n_kernels > 1024) {
        ts_err_set(err, "session %s has %zu kernels (1 to 1024)", m->session_id, m->n_kernels);
        return NULL;
    }
    const char *ids[] = {m->access_key,  m->user_id,      m->project_id,
                         m->domain_name, m->architecture, m->designated_agent};
    for (size_t i = 0; i < TS_ARRAY_LEN(ids); i++)
        if (strlen(ids[i]) >= (i == 4 ? SCHED_ARCH_MAX : SCHED_ID_MAX)) {
            ts_err_set(err, "session %s: owner, architecture or designated agent field too long",
                       m->session_id);
            return NULL;
        }
    sched_session *s = sched_session_new(m->session_id, (int)m->n_kernels);
    ts_strlcpy(s->access_key, m->access_key, sizeof(s->access_key));
    ts_strlcpy(s->user_id, m->user_id, sizeof(s->user_id));
    ts_strlcpy(s->project_id, m->project_id, sizeof(s->project_id));
    ts_strlcpy(s->domain, m->domain_name, sizeof(s->domain));
    ts_strlcpy(s->arch, m->architecture, sizeof(s->arch));
    s->priority = m->priority;
    s->enqueued_at_ms = m->enqueued_at_ms;
    s->starts_at_ms = m->starts_at_ms;
    s->multi_node = m->multi_node || strcmp(m->cluster_mode, "multi-node") == 0;
    ts_strlcpy(s->agent, m->designated_agent, sizeof(s->agent));
    for (size_t i = 0; i < m->n_kernels; i++) {
        const Tessera__V1__SessionEnqueued__KernelRequest *kr = m->kernels[i];
        const char *kid = kr->kernel_id;
        bool ok = kid[0] && strlen(kid) < SCHED_ID_MAX;
        for (const char *p = kid; ok && *p; p++)
            ok = *p > ' ' && *p != '=';
        if (!ok) {
            ts_err_set(err, "session %s: kernel id '%s' is empty, too long or has blanks",
                       m->session_id, kid);
            sched_session_free(s);
            return NULL;
        }
        ts_strlcpy(s->kernels[i].kernel_id, kid, SCHED_ID_MAX);
        if (strlen(kr->designated_agent) >= SCHED_ID_MAX) {
            ts_err_set(err, "session %s: kernel %s: designated agent too long", m->session_id, kid);
            sched_session_free(s);
            return NULL;
        }
        ts_strlcpy(s->kernels[i].agent, kr->designated_agent, SCHED_ID_MAX);
        slots_clear(&s->kernels[i].slots);
        for (size_t j = 0; j < kr->n_slots; j++) {
            int id;
            int64_t v;
            if (!slot_intern(kr->slots[j]->name, &id, err) ||
                !slot_parse(id, kr->slots[j]->amount, &v, err)) {
                ts_err_prefix(err, "session %s kernel %s", m->session_id, kid);
                sched_session_free(s);
                return NULL;
            }
            slots_put(&s->kernels[i].slots, id, v);
        }
    }
    if (!sched_session_finish(s, err)) {
        sched_session_free(s);
        return NULL;
    }
    return s;
}

static sched_scope scope_of(const char *name, bool *ok)
{
    *ok = true;
    if (strcmp(name, "keypair") == 0) return SCHED_SCOPE_KEYPAIR;
    if (strcmp(name, "user") == 0) return SCHED_SCOPE_USER;
    if (strcmp(name, "project") == 0) return SCHED_SCOPE_PROJECT;
    if (strcmp(name, "domain") == 0) return SCHED_SCOPE_DOMAIN;
    *ok = false;
    return SCHED_SCOPE_KEYPAIR;
}

static void apply_limits(sched_svc *x, const Tessera__V1__SessionEnqueued *m)
{
    for (size_t i = 0; i < m->n_limits; i++) {
        const Tessera__V1__ScopeLimits *l = m->limits[i];
        bool ok;
        sched_scope sc = scope_of(l->scope, &ok);
        if (!ok || !l->id[0]) continue;
        sched_limits lim = {.max_concurrent_sessions = l->max_concurrent_sessions,
                            .max_pending_sessions = l->max_pending_sessions};
        slots_clear(&lim.max_slots);
        for (size_t j = 0; j < l->n_max_slots; j++) {
            ts_err err;
            int id;
            int64_t v;
            if (!slot_intern(l->max_slots[j]->name, &id, &err) ||
                !slot_parse(id, l->max_slots[j]->amount, &v, &err)) {
                TLOG_WARN("limit ignored", "scope=%s id=%s error=\"%s\"", l->scope, l->id, err.msg);
                continue;
            }
            slots_put(&lim.max_slots, id, v);
        }
        sched_accounts_set_limits(sched_engine_accounts(x->e), sc, l->id, &lim);
    }
}

/* Refused at enqueue or invalid: say why; it will not be queued. */
static void refuse(sched_svc *x, const Tessera__V1__SessionEnqueued *m, const char *group,
                   const char *code, const char *reason)
{
    sched_session tmp;
    memset(&tmp, 0, sizeof(tmp));
    ts_strlcpy(tmp.id, m->session_id, sizeof(tmp.id));
    TLOG_WARN("session not queued", "group=%s code=%s reason=\"%s\"", group, code, reason);
    sched_publish_unschedulable(x, group, &tmp, code, reason);
    sched_store_unpersist_later(x, m->session_id);
}

void sched_on_enqueued(sched_svc *x, Tessera__V1__SessionEnqueued *m, int64_t at_us)
{
    sched_rec *rec = strmap_get(x->recs, m->session_id);
    if (rec) { /* a replay: queued or holding slots already */
        atomic_fetch_add(&x->st.duplicates, 1);
        if (rec->state == REC_PENDING && !rec->enq) {
            rec->enq = m;
            return;
        }
        tessera__v1__session_enqueued__free_unpacked(m, NULL);
        return;
    }
    const char *group = m->resource_group[0] ? m->resource_group : "default";
    if (!sched_ensure_group(x, group)) {
        char why[SCHED_REASON_MAX];
        snprintf(why, sizeof(why), "resource group '%s' is not usable", group);
        refuse(x, m, group, "unknown_group", why);
        tessera__v1__session_enqueued__free_unpacked(m, NULL);
        return;
    }
    apply_limits(x, m);
    ts_err err;
    sched_session *s = session_from_enqueued(m, &err);
    if (!s) {
        refuse(x, m, group, "invalid_request", err.msg);
        tessera__v1__session_enqueued__free_unpacked(m, NULL);
        return;
    }
    sched_verdict why;
    if (!sched_engine_enqueue(x->e, group, s, &why)) {
        refuse(x, m, group, why.code, why.reason);
        sched_session_free(s);
        tessera__v1__session_enqueued__free_unpacked(m, NULL);
        return;
    }
    rec = sched_rec_get_or_new(x, m->session_id, group);
    rec->state = REC_PENDING;
    rec->enq = m;
    rec->queued_us = at_us;
    ts_strlcpy(rec->scope[RESV_SCOPE_KEYPAIR], m->access_key, SCHED_ID_MAX);
    ts_strlcpy(rec->scope[RESV_SCOPE_USER], m->user_id, SCHED_ID_MAX);
    ts_strlcpy(rec->scope[RESV_SCOPE_PROJECT], m->project_id, SCHED_ID_MAX);
    ts_strlcpy(rec->scope[RESV_SCOPE_DOMAIN], m->domain_name, SCHED_ID_MAX);
    atomic_fetch_add(&x->st.enqueued, 1);
    atomic_fetch_add(&x->st.pending, 1);
    sched_mark_dirty(x, group);
}

/* ---- the end of a session -------------------------------------------------------------------- */

/* The kernels' slots come back in the model (false from the engine: it did
 * not hold that kernel, e.g. another instance placed it). */
static void release_in_model(sched_svc *x, const char *const *kernel_ids, int n)
{
    for (int i = 0; i < n; i++)
        TS_IGNORE(sched_engine_release(x->e, kernel_ids[i]));
}

void sched_release_rec(sched_svc *x, sched_rec *rec)
{
    const char **ids = ts_calloc((size_t)rec->nk + 1, sizeof(*ids));
    bool *rel = ts_calloc((size_t)rec->nk + 1, sizeof(*rel));
    for (int i = 0; i < rec->nk; i++)
        ids[i] = rec->k[i].kernel_id;
    ts_err err;
    int n;
    if (!resv_release(x->v, ids, rec->nk, rel, &n, &err)) {
        /* The tombstone is in Redis: the next start-up (or the sweep) releases it. */
        TLOG_ERROR("release failed, will retry", "error=\"%s\"", err.msg);
        free(ids);
        free(rel);
        return;
    }
    release_in_model(x, ids, rec->nk);
    atomic_fetch_add(&x->st.released, (uint64_t)n);
    atomic_fetch_sub(&x->st.held_sessions, 1);
    TLOG_DEBUG("session released", "kernels=%d released_now=%d", rec->nk, n);
    sched_mark_dirty(x, rec->group);
    free(ids);
    free(rel);
    sched_rec_drop(x, rec);
}

void sched_on_ended(sched_svc *x, const char *session_id, const char *reason)
{
    atomic_fetch_add(&x->st.ended, 1);
    sched_rec *rec = strmap_get(x->recs, session_id);
    if (rec && rec->state == REC_PENDING) {
        if (sched_engine_cancel(x->e, rec->group, session_id)) atomic_fetch_sub(&x->st.pending, 1);
        TLOG_INFO("pending session removed", "reason=\"%s\"", reason);
        sched_rec_drop(x, rec);
        return;
    }
    if (rec) {
        sched_release_rec(x, rec);
        return;
    }
    /* Not known here: placed by another instance (or before a rebalance)? */
    char **kids = NULL;
    int n, done;
    ts_err err;
    if (!sched_store_find_kernels(x, session_id, &kids, &n, &err)) {
        TLOG_WARN("kernels of a session placed elsewhere not looked up", "error=\"%s\"", err.msg);
        return;
    }
    if (n == 0) return;
    if (!resv_release(x->v, (const char *const *)kids, n, NULL, &done, &err))
        TLOG_ERROR("release failed", "error=\"%s\"", err.msg);
    else
        atomic_fetch_add(&x->st.released, (uint64_t)done);
    release_in_model(x, (const char *const *)kids, n);
    sched_store_free_ids(kids, (size_t)n);
}

/* ---- the pass with batched reservations ------------------------------------------------------ */

struct sched_batch {
    int n, cap;
    sched_rec **rec;
    resv_session *rs;
    resv_kernel **rk;
    resv_result *res;
    char *(*lim)[RESV_SCOPES]; /* the limits each reservation carries */
};

static void batch_free_limits(sched_batch *b, int i)
{
    for (int sc = 0; sc < RESV_SCOPES; sc++) {
        free(b->lim[i][sc]);
        b->lim[i][sc] = NULL;
    }
}

void sched_batch_free(sched_batch *b)
{
    if (!b) return;
    for (int i = 0; i < b->cap; i++) {
        free(b->rk[i]);
        batch_free_limits(b, i);
    }
    free(b->lim);
    free(b->rk);
    free(b->rec);
    free(b->rs);
    free(b->res);
    free(b);
}

static sched_batch *batch_get(sched_svc *x)
{
    if (!x->batch) {
        sched_batch *b = ts_calloc(1, sizeof(*b));
        b->cap = (int)sched_cfg.reserve_batch;
        b->rec = ts_calloc((size_t)b->cap, sizeof(*b->rec));
        b->rs = ts_calloc((size_t)b->cap, sizeof(*b->rs));
        b->rk = ts_calloc((size_t)b->cap, sizeof(*b->rk));
        b->res = ts_calloc((size_t)b->cap, sizeof(*b->res));
        b->lim = ts_calloc((size_t)b->cap, sizeof(*b->lim));
        x->batch = b;
    }
    return x->batch;
}

/* Back to the queue after a refusal (its kernels already released in the model). */
static void requeue(sched_svc *x, sched_rec *rec)
{
    free(rec->k);
    rec->k = NULL;
    rec->nk = 0;
    rec->state = REC_PENDING;
    ts_err err;
    sched_session *s = rec->enq ? session_from_enqueued(rec->enq, &err) : NULL;
    sched_verdict why;
    if (!s || !sched_engine_enqueue(x->e, rec->group, s, &why)) {
        TLOG_ERROR("could not requeue a refused session", "");
        if (s) sched_session_free(s);
        atomic_fetch_sub(&x->st.pending, 1);
        sched_rec_drop(x, rec);
        return;
    }
    sched_mark_dirty(x, rec->group);
}

static void batch_flush(sched_svc *x)
{
    sched_batch *b = x->batch;
    if (!b || b->n == 0) return;
    ts_err err;
    bool asked = resv_reserve(x->v, b->rs, b->n, b->res, &err);
    if (!asked) {
        TLOG_ERROR("reservation failed (Redis)", "sessions=%d error=\"%s\"", b->n, err.msg);
        for (int i = 0; i < b->n; i++) {
            b->res[i].status = RESV_REFUSED;
            ts_strlcpy(b->res[i].reason, err.msg, sizeof(b->res[i].reason));
        }
    }
    /* Undo the refused ones in the model first, then resync their agents. */
    char(*resync)[SCHED_ID_MAX] = NULL;
    int nresync = 0;
    for (int i = 0; i < b->n; i++) {
        sched_rec *rec = b->rec[i];
        sched_log_session(rec->id);
        if (b->res[i].status == RESV_REFUSED || b->res[i].status == RESV_TAKEN) {
            atomic_fetch_add(&x->st.refused, 1);
            if (b->res[i].status == RESV_TAKEN)
                TLOG_INFO("session placed by another instance: left to it", "");
            else
                TLOG_INFO("reservation refused", "reason=\"%s\"", b->res[i].reason);
            if (strncmp(b->res[i].reason, "limit:", 6) == 0) sched_limits_refused(x, rec);
            for (int k = 0; k < rec->nk; k++) {
                /* rolled back here: false only when the model never held it */
                TS_IGNORE(sched_engine_release(x->e, rec->k[k].kernel_id));
                resync = ts_realloc(resync, sizeof(*resync) * (size_t)(nresync + 1));
                ts_strlcpy(resync[nresync++], rec->k[k].agent_id, SCHED_ID_MAX);
            }
            continue;
        }
        rec->state = REC_HELD;
        sched_publish_scheduled(x, rec);
        sched_store_unpersist_later(x, rec->id);
        atomic_fetch_add(&x->st.scheduled, 1);
        atomic_fetch_sub(&x->st.pending, 1);
        atomic_fetch_add(&x->st.held_sessions, 1);
        int64_t lat = ts_now_mono_us() - rec->queued_us;
        if (rec->queued_us && lat >= 0) {
            atomic_fetch_add(&x->st.latency_us_sum, (uint64_t)lat);
            atomic_fetch_add(&x->st.latency_count, 1);
        }
    }
    if (asked)
        for (int i = 0; i < nresync; i++) {
            sched_log_agent(resync[i]);
            /* logged; the periodic resync comes back to it */
            TS_IGNORE(sched_resync_agent(x, resync[i]));
        }
    for (int i = 0; i < b->n; i++) {
        if (b->res[i].status == RESV_REFUSED) {
            sched_log_session(b->rec[i]->id);
            requeue(x, b->rec[i]);
        } else if (b->res[i].status == RESV_TAKEN) {
            /* The instance that reserved it publishes SessionScheduled and
             * deletes its pending record; should it die first, the owner of
             * the session's partition finds the record holding slots and
             * publishes what Redis holds (ownership.h). */
            atomic_fetch_sub(&x->st.pending, 1);
            sched_rec_drop(x, b->rec[i]);
        }
    }
    tlog_ctx_clear();
    free(resync);
    for (int i = 0; i < b->n; i++)
        batch_free_limits(b, i);
    b->n = 0;
}

/* The reserve hook: record the placement in the session's record and the batch. */
static bool collect(void *ctx, const char *group, const sched_session *s, const sched_kplace *k,
                    int nk, ts_err *err)
{
    (void)group;
    sched_svc *x = ctx;
    sched_rec *rec = strmap_get(x->recs, s->id);
    if (!rec) {
        ts_err_set(err, "session %s has no record", s->id);
        return false;
    }
    sched_batch *b = batch_get(x);
    ts_assert(b->n < b->cap);
    free(rec->k);
    rec->k = ts_calloc((size_t)nk, sizeof(*rec->k));
    rec->nk = nk;
    for (int i = 0; i < nk; i++) {
        sched_held *h = &rec->k[i];
        ts_strlcpy(h->kernel_id, k[i].kernel->kernel_id, sizeof(h->kernel_id));
        ts_strlcpy(h->agent_id, k[i].pick.agent->id, sizeof(h->agent_id));
        h->slots = k[i].kernel->slots;
        h->ndev = k[i].pick.ndev;
        for (int d = 0; d < h->ndev; d++) {
            h->dev[d] = (resv_dev){k[i].pick.dev[d].dev, k[i].pick.dev[d].shares};
            h->whole[d] = k[i].pick.dev[d].whole;
        }
        const Tessera__V1__SessionEnqueued__KernelRequest *kr =
            rec->enq && (size_t)i < rec->enq->n_kernels ? rec->enq->kernels[i] : NULL;
        ts_strlcpy(h->role, kr && kr->cluster_role[0] ? kr->cluster_role : (i ? "sub" : "main"),
                   sizeof(h->role));
        h->idx = kr ? kr->cluster_idx : i;
    }
    int j = b->n++;
    b->rec[j] = rec;
    b->rk[j] = ts_realloc(b->rk[j], sizeof(resv_kernel) * (size_t)nk);
    for (int i = 0; i < nk; i++)
        b->rk[j][i] = (resv_kernel){rec->k[i].kernel_id, rec->k[i].agent_id, &rec->k[i].slots,
                                    rec->k[i].ndev, rec->k[i].dev};
    b->rs[j] = (resv_session){
        rec->id, {rec->scope[0], rec->scope[1], rec->scope[2], rec->scope[3]}, nk, b->rk[j]};
    sched_limits_encode(x, rec, b->lim[j]);
    for (int sc = 0; sc < RESV_SCOPES; sc++)
        b->rs[j].limits[sc] = b->lim[j][sc];
    return true;
}

static void outcome(void *ctx, const sched_outcome *o)
{
    sched_svc *x = ctx;
    if (o->scheduled) {
        if (x->batch && x->batch->n >= x->batch->cap) batch_flush(x);
        return;
    }
    if (!o->reason_changed) return;
    sched_log_session(o->session->id);
    sched_publish_unschedulable(x, o->group, o->session, o->code, o->reason);
    tlog_ctx_clear();
}

void sched_run_passes(sched_svc *x)
{
    if (x->redis_lost) return;
    /* Take the dirty set: passes may mark groups dirty again (refusals). */
    strmap *todo = x->dirty;
    x->dirty = strmap_new();
    size_t pos = 0;
    const char *group;
    void *unused;
    int64_t now = ts_now_wall_ms();
    while (strmap_next(todo, &pos, &group, &unused)) {
        int64_t t0 = ts_now_mono_us();
        sched_pass_stats st;
        (void)sched_engine_pass(x->e, group, now, collect, outcome, x, &st); /* counted in st */
        batch_flush(x);
        /* stopped at the look-ahead after placing some: the sessions behind
         * get the next pass now, not at the next sweep */
        if (st.stopped && st.scheduled > 0) sched_mark_dirty(x, group);
        atomic_fetch_add(&x->st.passes, 1);
        atomic_fetch_add(&x->st.pass_us_sum, (uint64_t)(ts_now_mono_us() - t0));
        if (st.scheduled || st.held)
            TLOG_DEBUG("pass", "group=%s considered=%d scheduled=%d unschedulable=%d memo_hits=%d",
                       group, st.considered, st.scheduled, st.unschedulable, st.memo_hits);
    }
    strmap_free(todo, NULL);
    sched_store_unpersist_flush(x);
}
