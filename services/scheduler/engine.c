/* engine.c: resource groups, allocations and the scheduling pass. */
#include "services/scheduler/engine.h"

#include "libcommon/log.h"
#include "services/scheduler/strmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rg {
    char name[SCHED_ID_MAX];
    sched_rg_policy policy;
    sched_group *group;
    sched_queue *queue;
} rg;

/* A kernel holding slots. */
typedef struct alloc {
    char kernel_id[SCHED_ID_MAX];
    char session_id[SCHED_ID_MAX];
    rg *rg;
    char agent_id[SCHED_ID_MAX];
    slots_t slots;
    int ndev;
    sched_devalloc dev[SCHED_MAX_DEVICES];
} alloc;

/* A session holding slots: its owner, and how many of its kernels still hold. */
typedef struct live {
    char scope[SCHED_SCOPE_COUNT][SCHED_ID_MAX];
    int kernels;
} live;

struct sched_engine {
    strmap *groups;   /* name -> rg */
    strmap *allocs;   /* kernel id -> alloc */
    strmap *sessions; /* session id -> live */
    sched_accounts *accounts;
};

static void free_rg(void *p)
{
    rg *r = p;
    sched_group_free(r->group);
    sched_queue_free(r->queue);
    free(r);
}

sched_engine *sched_engine_new(void)
{
    sched_engine *e = ts_calloc(1, sizeof(*e));
    e->groups = strmap_new();
    e->allocs = strmap_new();
    e->sessions = strmap_new();
    e->accounts = sched_accounts_new();
    return e;
}

void sched_engine_free(sched_engine *e)
{
    if (!e) return;
    strmap_free(e->groups, free_rg);
    strmap_free(e->allocs, free);
    strmap_free(e->sessions, free);
    sched_accounts_free(e->accounts);
    free(e);
}

sched_accounts *sched_engine_accounts(sched_engine *e)
{
    return e->accounts;
}

bool sched_engine_add_group(sched_engine *e, const char *name, const sched_rg_policy *policy,
                            ts_err *err)
{
    if (!name || !name[0] || strlen(name) >= SCHED_ID_MAX) {
        ts_err_set(err, "resource group name must be 1 to %d characters", SCHED_ID_MAX - 1);
        return false;
    }
    if (strmap_get(e->groups, name)) {
        ts_err_set(err, "resource group %s exists", name);
        return false;
    }
    rg *r = ts_calloc(1, sizeof(*r));
    ts_strlcpy(r->name, name, sizeof(r->name));
    r->policy = *policy;
    r->group = sched_group_new(name, policy->selector);
    r->queue = sched_queue_new(policy->order);
    strmap_put(e->groups, name, r);
    return true;
}

void sched_engine_set_policy(sched_engine *e, const char *name, const sched_rg_policy *policy)
{
    rg *r = strmap_get(e->groups, name);
    if (!r) return;
    r->policy = *policy;
    sched_group_set_selector(r->group, policy->selector);
    sched_queue_set_order(r->queue, policy->order);
}

sched_group *sched_engine_group(sched_engine *e, const char *name)
{
    rg *r = strmap_get(e->groups, name);
    return r ? r->group : NULL;
}

sched_queue *sched_engine_queue(sched_engine *e, const char *name)
{
    rg *r = strmap_get(e->groups, name);
    return r ? r->queue : NULL;
}

size_t sched_engine_alloc_count(const sched_engine *e)
{
    return strmap_len(e->allocs);
}

bool sched_engine_enqueue(sched_engine *e, const char *group, sched_session *s, sched_verdict *why)
{
    rg *r = strmap_get(e->groups, group);
    why->code = NULL;
    if (!r) {
        why->code = "unknown_group";
        snprintf(why->reason, sizeof(why->reason), "unknown resource group %s", group);
        return false;
    }
    if (!sched_predicates_enqueue(e->accounts, s, why)) return false;
    ts_err err;
    if (!sched_queue_push(r->queue, s, &err)) {
        why->code = "duplicate";
        ts_strlcpy(why->reason, err.msg, sizeof(why->reason));
        return false;
    }
    sched_accounts_pending(e->accounts, s, +1);
    return true;
}

static void unhold(rg *r, sched_session *s)
{
    if (!s->held_agent[0]) return;
    sched_agent *a = sched_group_agent(r->group, s->held_agent);
    if (a && strcmp(a->reserved_for, s->id) == 0) sched_group_hold(r->group, a, NULL);
    s->held_agent[0] = '\0';
}

bool sched_engine_cancel(sched_engine *e, const char *group, const char *session_id)
{
    rg *r = strmap_get(e->groups, group);
    sched_session *s = r ? sched_queue_find(r->queue, session_id) : NULL;
    if (!s) return false;
    unhold(r, s);
    sched_queue_take(r->queue, s);
    sched_accounts_pending(e->accounts, s, -1);
    sched_session_free(s);
    return true;
}

/* ---- allocations ------------------------------------------------------------------------- */

static void record(sched_engine *e, rg *r, const sched_session *s, const sched_kplace *k, int nk)
{
    live *l = strmap_get(e->sessions, s->id);
    if (!l) {
        l = ts_calloc(1, sizeof(*l));
        const char *ids[SCHED_SCOPE_COUNT];
        sched_session_scopes(s, ids);
        for (int i = 0; i < SCHED_SCOPE_COUNT; i++)
            ts_strlcpy(l->scope[i], ids[i], sizeof(l->scope[i]));
        strmap_put(e->sessions, s->id, l);
        const char *scopes[SCHED_SCOPE_COUNT];
        for (int i = 0; i < SCHED_SCOPE_COUNT; i++)
            scopes[i] = l->scope[i];
        for (int i = 0; i < SCHED_SCOPE_COUNT; i++) /* one more session in every scope */
            sched_accounts_get(e->accounts, (sched_scope)i, scopes[i])->sessions++;
    }
    for (int i = 0; i < nk; i++) {
        alloc *a = ts_calloc(1, sizeof(*a));
        ts_strlcpy(a->kernel_id, k[i].kernel->kernel_id, sizeof(a->kernel_id));
        ts_strlcpy(a->session_id, s->id, sizeof(a->session_id));
        a->rg = r;
        ts_strlcpy(a->agent_id, k[i].pick.agent->id, sizeof(a->agent_id));
        a->slots = k[i].kernel->slots;
        a->ndev = k[i].pick.ndev;
        memcpy(a->dev, k[i].pick.dev, sizeof(a->dev[0]) * (size_t)a->ndev);
        alloc *old = strmap_put(e->allocs, a->kernel_id, a);
        ts_assert(old == NULL);
        l->kernels++;
        for (int sc = 0; sc < SCHED_SCOPE_COUNT; sc++) {
            sched_account *acc = sched_accounts_get(e->accounts, (sched_scope)sc, l->scope[sc]);
            ts_err err;
            if (!slots_add(&acc->used, &a->slots, &err)) ts_panic("usage: %s", err.msg);
        }
        sched_queue_charge(r->queue, l->scope[SCHED_SCOPE_USER], &a->slots, +1);
    }
}

bool sched_engine_release(sched_engine *e, const char *kernel_id)
{
    alloc *a = strmap_del(e->allocs, kernel_id);
    if (!a) return false;
    sched_agent *ag = sched_group_agent(a->rg->group, a->agent_id);
    ts_err err;
    if (ag && !sched_group_uncommit(a->rg->group, ag, &a->slots, a->dev, a->ndev, &err))
        TLOG_WARN("release does not match the model", "kernel=%s agent=%s error=\"%s\"",
                  a->kernel_id, a->agent_id, err.msg);
    live *l = strmap_get(e->sessions, a->session_id);
    if (l) {
        const char *scopes[SCHED_SCOPE_COUNT];
        for (int i = 0; i < SCHED_SCOPE_COUNT; i++)
            scopes[i] = l->scope[i];
        sched_accounts_release_slots(e->accounts, scopes, &a->slots);
        sched_queue_charge(a->rg->queue, l->scope[SCHED_SCOPE_USER], &a->slots, -1);
        if (--l->kernels <= 0) {
            sched_accounts_release_session(e->accounts, scopes);
            free(strmap_del(e->sessions, a->session_id));
        }
    }
    free(a);
    return true;
}

bool sched_engine_adopt(sched_engine *e, const char *group, const sched_session *s,
                        const sched_kplace *k, int nk, ts_err *err)
{
    rg *r = strmap_get(e->groups, group);
    if (!r) {
        ts_err_set(err, "unknown resource group %s", group);
        return false;
    }
    for (int i = 0; i < nk; i++)
        if (strmap_get(e->allocs, k[i].kernel->kernel_id)) {
            ts_err_set(err, "kernel %s already holds slots", k[i].kernel->kernel_id);
            return false;
        }
    for (int i = 0; i < nk; i++)
        sched_group_commit(r->group, &k[i].pick, &k[i].kernel->slots);
    record(e, r, s, k, nk);
    return true;
}

/* ---- the pass ---------------------------------------------------------------------------- */

#define MEMO_MAX 64

typedef struct memo {
    slots_t req;
    char arch[SCHED_ARCH_MAX];
    const char *code;
    char reason[SCHED_REASON_MAX];
} memo;

/* The agent id must go to, when it may take sessions of this architecture
 * now (NULL otherwise). */
static sched_agent *designated(const rg *r, const sched_session *s, const char *id)
{
    sched_agent *a = sched_group_agent(r->group, id);
    if (!a || !a->schedulable || (s->arch[0] && strcmp(a->arch, s->arch) != 0)) return NULL;
    return a;
}

/* Why a designated session (or kernel: want, its request) does not fit on
 * its agent id. */
static const char *explain_designated(const rg *r, const sched_session *s, const char *id,
                                      const slots_t *want, char *reason, size_t size)
{
    sched_agent *a = sched_group_agent(r->group, id);
    if (!a) {
        snprintf(reason, size, "designated agent %s is not alive in resource group %s", id,
                 r->name);
        return "no_agent";
    }
    if (!a->schedulable && a->drained) {
        snprintf(reason, size, "designated agent %s is drained", s->agent);
        return "agent_drained";
    }
    if (!a->schedulable || (s->arch[0] && strcmp(a->arch, s->arch) != 0)) {
        snprintf(reason, size, "designated agent %s %s", id,
                 a->schedulable ? "has another architecture" : "is not schedulable");
        return "no_agent";
    }
    char x[SLOT_FMT_MAX], y[SLOT_FMT_MAX];
    int sh = slots_short(want, &a->total);
    if (sh >= 0) {
        snprintf(reason, size, "requested %s %s is more than designated agent %s has (%s)",
                 slot_name(sh), slot_format(sh, want->v[sh], x, sizeof(x)), id,
                 slot_format(sh, slots_get(&a->total, sh), y, sizeof(y)));
        return "too_big";
    }
    if (a->reserved_for[0] && strcmp(a->reserved_for, s->id) != 0) {
        snprintf(reason, size, "designated agent %s is held for a session waiting longer", id);
        return "held_for_aged_session";
    }
    slots_t free = a->total;
    ts_err err;
    sh = slots_sub(&free, &a->used, &err) ? slots_short(want, &free) : -1;
    if (sh >= 0)
        snprintf(reason, size, "not enough %s on designated agent %s (%s requested, %s free)",
                 slot_name(sh), id, slot_format(sh, want->v[sh], x, sizeof(x)),
                 slot_format(sh, slots_get(&free, sh), y, sizeof(y)));
    else
        snprintf(reason, size, "not enough room on designated agent %s (its GPU devices)", id);
    return "no_capacity";
}

/* Whether a kernel of s names an agent of its own. */
static bool per_kernel_agents(const sched_session *s)
{
    for (int i = 0; i < s->nkernels; i++)
        if (s->kernels[i].agent[0]) return true;
    return false;
}

/* Place every kernel of s (all or nothing); on failure *failed says which
 * request and *failed_kernel which kernel (-1: the session as a whole). */
static bool place_session(rg *r, sched_session *s, sched_kplace *k, const slots_t **failed,
                          int *failed_kernel)
{
    sched_group *g = r->group;
    sched_agent *only = NULL;
    int n = s->nkernels;
    *failed_kernel = -1;
    if (s->agent[0]) { /* designated: every kernel on that agent, or none placed */
        only = designated(r, s, s->agent);
        if (!only) {
            *failed = &s->total;
            return false;
        }
    } else if (!s->multi_node && n > 1) { /* single node: choose the agent for the whole session */
        sched_pick p0;
        if (!sched_group_place(g, &s->total, s->arch, s->id, NULL, &p0)) {
            *failed = &s->total;
            return false;
        }
        only = p0.agent;
    }
    for (int i = 0; i < n; i++) {
        k[i].kernel = &s->kernels[i];
        /* a kernel of its own agent (a multi-node session's per-kernel agentList) */
        sched_agent *mine = only;
        bool own = !only && s->kernels[i].agent[0];
        if (own) mine = designated(r, s, s->kernels[i].agent);
        if ((own && !mine) ||
            !sched_group_place(g, &s->kernels[i].slots, s->arch, s->id, mine, &k[i].pick)) {
            for (int j = i - 1; j >= 0; j--) {
                ts_err err;
                if (!sched_group_uncommit(g, k[j].pick.agent, &k[j].kernel->slots, k[j].pick.dev,
                                          k[j].pick.ndev, &err))
                    ts_panic("rollback: %s", err.msg);
            }
            *failed = only ? &s->total : &s->kernels[i].slots;
            if (own) *failed_kernel = i;
            return false;
        }
        sched_group_commit(g, &k[i].pick, &s->kernels[i].slots);
    }
    return true;
}

/* A multi-node session whose kernel `failed` (its request) did not fit after
 * the kernels before it were placed, all of the same request: how many
 * were placed (so each fits alone, only not all at once); 0 otherwise. The
 * group's explanation of one kernel would then wrongly say that no agent
 * has room for one. */
static int placed_before(const sched_session *s, const slots_t *failed)
{
    if (!s->multi_node) return 0;
    for (int i = 1; i < s->nkernels; i++) {
        if (&s->kernels[i].slots != failed) continue;
        for (int j = 0; j < i; j++)
            if (!slots_equal(&s->kernels[j].slots, failed)) return 0;
        return i;
    }
    return 0;
}

static void rollback(rg *r, sched_kplace *k, int n)
{
    for (int j = n - 1; j >= 0; j--) {
        ts_err err;
        if (!sched_group_uncommit(r->group, k[j].pick.agent, &k[j].kernel->slots, k[j].pick.dev,
                                  k[j].pick.ndev, &err))
            ts_panic("rollback: %s", err.msg);
    }
}

static void not_scheduled(const rg *r, sched_session *s, const char *code, const char *reason,
                          sched_outcome_fn outcome, void *ctx, sched_pass_stats *st)
{
    bool changed = strcmp(s->reason_code, code) != 0 || strcmp(s->reason, reason) != 0;
    ts_strlcpy(s->reason_code, code, sizeof(s->reason_code));
    if (s->reason != reason) ts_strlcpy(s->reason, reason, sizeof(s->reason));
    s->attempts++;
    st->unschedulable++;
    if (outcome) {
        sched_outcome o = {.group = r->name,
                           .session = s,
                           .code = s->reason_code,
                           .reason = s->reason,
                           .reason_changed = changed};
        outcome(ctx, &o);
    }
}

/* Long: one pass over a group's queue; the shapes that failed, the agents held and the stats are
 * shared by every branch of its loop. */
int sched_engine_pass(sched_engine *e, const char *group, int64_t now_ms, sched_reserve_fn reserve,
                      sched_outcome_fn outcome, void *ctx, sched_pass_stats *stats)
{
    sched_pass_stats local;
    sched_pass_stats *st = stats ? stats : &local;
    memset(st, 0, sizeof(*st));
    rg *r = strmap_get(e->groups, group);
    if (!r) return 0;
    memo memos[MEMO_MAX];
    int nmemo = 0, kcap = 0;
    sched_kplace *k = NULL;
    sched_queue_iter *it = sched_queue_iter_new(r->queue, sched_group_capacity(r->group));
    sched_session *s;
    int bound = r->policy.lookahead;
    while ((s = sched_queue_iter_next(it))) {
        if (bound > 0 && st->considered >= bound) { /* s is left for the next pass */
            st->stopped = true;
            break;
        }
        st->considered++;
        sched_verdict v;
        if (!sched_predicates_check(e->accounts, s, now_ms, &v)) {
            not_scheduled(r, s, v.code, v.reason, outcome, ctx, st);
            continue;
        }
        /* the agent held for s may have gone, or been given to another */
        if (s->held_agent[0]) {
            sched_agent *h = sched_group_agent(r->group, s->held_agent);
            if (!h || strcmp(h->reserved_for, s->id) != 0) s->held_agent[0] = '\0';
        }
        /* a shape that failed anywhere fails again; a designated session's
         * failure is its agent's only */
        bool one_shape =
            (!s->multi_node || s->nkernels == 1) && !s->agent[0] && !per_kernel_agents(s);
        const memo *hit = NULL;
        if (one_shape && !s->held_agent[0])
            for (int i = 0; i < nmemo && !hit; i++)
                if (strcmp(memos[i].arch, s->arch) == 0 && slots_le(&memos[i].req, &s->total))
                    hit = &memos[i];
        if (s->nkernels > kcap) {
            kcap = s->nkernels;
            k = ts_realloc(k, sizeof(*k) * (size_t)kcap);
        }
        const slots_t *failed = NULL;
        int failed_kernel = -1;
        if (!hit && place_session(r, s, k, &failed, &failed_kernel)) {
            ts_err err = {{0}};
            if (reserve && !reserve(ctx, r->name, s, k, s->nkernels, &err)) {
                rollback(r, k, s->nkernels);
                st->refused++;
                char why[SCHED_REASON_MAX];
                snprintf(why, sizeof(why), "reservation refused: %s", err.msg);
                not_scheduled(r, s, "reservation_refused", why, outcome, ctx, st);
                continue;
            }
            record(e, r, s, k, s->nkernels);
            unhold(r, s);
            sched_queue_take(r->queue, s);
            sched_accounts_pending(e->accounts, s, -1);
            st->scheduled++;
            if (outcome) {
                sched_outcome o = {
                    .group = r->name, .session = s, .scheduled = true, .nk = s->nkernels, .k = k};
                outcome(ctx, &o);
            }
            sched_session_free(s);
            continue;
        }
        /* it does not fit now: explain, remember the shape, age */
        const char *code;
        char reason[SCHED_REASON_MAX];
        int placed;
        if (hit) {
            st->memo_hits++;
            code = hit->code;
            ts_strlcpy(reason, hit->reason, sizeof(reason));
        } else if (s->agent[0]) {
            code = explain_designated(r, s, s->agent, &s->total, reason, sizeof(reason));
        } else if (failed_kernel >= 0) {
            const sched_kreq *kr = &s->kernels[failed_kernel];
            code = explain_designated(r, s, kr->agent, &kr->slots, reason, sizeof(reason));
        } else if ((placed = placed_before(s, failed)) > 0) {
            code = "no_capacity";
            snprintf(reason, sizeof(reason),
                     "not enough room in resource group %s for the %d kernels of the session at "
                     "once (%d fit)",
                     r->name, s->nkernels, placed);
        } else {
            sched_fit f =
                sched_group_explain(r->group, failed, s->arch, s->id, reason, sizeof(reason));
            code = sched_fit_code(f);
            if (one_shape && nmemo < MEMO_MAX) {
                memo *m = &memos[nmemo++];
                m->req = s->total;
                ts_strlcpy(m->arch, s->arch, sizeof(m->arch));
                m->code = code;
                ts_strlcpy(m->reason, reason, sizeof(m->reason));
            }
        }
        if (!s->first_skipped_ms) s->first_skipped_ms = now_ms;
        if (r->policy.aging_ms > 0 && now_ms - s->first_skipped_ms >= r->policy.aging_ms &&
            !s->held_agent[0] && !s->agent[0] && !per_kernel_agents(s) &&
            sched_group_held_count(r->group) < r->policy.max_held && strcmp(code, "too_big") != 0 &&
            strcmp(code, "no_agent") != 0) {
            const slots_t *want = one_shape ? &s->total : &s->kernels[0].slots;
            sched_agent *a = sched_group_pick_hold(r->group, want, s->arch, s->id);
            if (a) {
                sched_group_hold(r->group, a, s->id);
                ts_strlcpy(s->held_agent, a->id, sizeof(s->held_agent));
                st->held++;
                TLOG_INFO("agent held for an aged session", "session=%s agent=%s waited_ms=%lld",
                          s->id, a->id, (long long)(now_ms - s->first_skipped_ms));
            }
        }
        not_scheduled(r, s, code, reason, outcome, ctx, st);
    }
    sched_queue_iter_free(it);
    free(k);
    return st->scheduled;
}
