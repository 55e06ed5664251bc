/* placement.c: agents of a resource group, bucket indexes per architecture, and
 * the per-device GPU rule (see placement.h and docs/scheduler.md). */
#include "services/scheduler/placement.h"

#include "services/scheduler/strmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- indexes --------------------------------------------------------------------------- */

enum {
    IX_DEVFREE = 0, /* most free shares on one device (quanta, capped) */
    IX_FREEDEV,     /* devices with nothing occupied */
    IX_CPU,         /* free cpu in whole cores (capped) */
    IX_COUNT
};

#define NBKT 1024

typedef struct idx {
    sched_agent *head[NBKT];
    uint64_t bits[NBKT / 64];
} idx;

typedef struct sched_pool {
    char arch[SCHED_ARCH_MAX];
    idx ix[IX_COUNT];
    sched_agent **agents; /* every agent of this architecture, schedulable or not */
    int n, cap;
    int rr;           /* roundrobin cursor */
    int32_t max_dcap; /* largest device capacity */
} sched_pool;

struct sched_group {
    char name[SCHED_ID_MAX];
    sched_selector selector;
    strmap *by_id;
    sched_pool **pools;
    int npools;
    sched_agent **all;
    size_t nall, capall;
    slots_t capacity;
    int held;
};

static int clamp_bucket(int64_t v)
{
    return v < 0 ? 0 : v >= NBKT ? NBKT - 1 : (int)v;
}

static int agent_key(const sched_agent *a, int which)
{
    switch (which) {
    case IX_DEVFREE: {
        int32_t best = 0;
        for (int d = 0; d < a->ndev; d++)
            if (a->dev_cap[d] - a->dev_used[d] > best) best = a->dev_cap[d] - a->dev_used[d];
        return clamp_bucket(best);
    }
    case IX_FREEDEV: {
        int n = 0;
        for (int d = 0; d < a->ndev; d++)
            n += a->dev_used[d] == 0 && a->dev_cap[d] > 0;
        return n;
    }
    default:
        return clamp_bucket((slots_get(&a->total, SLOT_CPU) - slots_get(&a->used, SLOT_CPU)) /
                            1000);
    }
}

static void idx_insert(idx *x, sched_agent *a, int which, int b)
{
    a->bucket[which] = (int16_t)b;
    a->prev[which] = NULL;
    a->next[which] = x->head[b];
    if (x->head[b]) x->head[b]->prev[which] = a;
    x->head[b] = a;
    x->bits[b / 64] |= 1ull << (b % 64);
}

static void idx_remove(idx *x, sched_agent *a, int which)
{
    int b = a->bucket[which];
    if (b < 0) return;
    if (a->prev[which])
        a->prev[which]->next[which] = a->next[which];
    else
        x->head[b] = a->next[which];
    if (a->next[which]) a->next[which]->prev[which] = a->prev[which];
    if (!x->head[b]) x->bits[b / 64] &= ~(1ull << (b % 64));
    a->bucket[which] = -1;
    a->prev[which] = a->next[which] = NULL;
}

/* Smallest nonempty bucket >= b, or -1. */
static int idx_next(const idx *x, int b)
{
    if (b < 0) b = 0;
    for (int w = b / 64; w < NBKT / 64; w++) {
        uint64_t m = x->bits[w];
        if (w == b / 64) m &= ~0ull << (b % 64);
        if (m) return w * 64 + __builtin_ctzll(m);
    }
    return -1;
}

/* Largest nonempty bucket <= b, or -1. */
static int idx_prev(const idx *x, int b)
{
    if (b >= NBKT) b = NBKT - 1;
    for (int w = b / 64; w >= 0; w--) {
        uint64_t m = x->bits[w];
        if (w == b / 64 && b % 64 != 63) m &= (1ull << (b % 64 + 1)) - 1;
        if (m) return w * 64 + 63 - __builtin_clzll(m);
    }
    return -1;
}

static void reindex(sched_agent *a)
{
    sched_pool *p = a->pool;
    for (int w = 0; w < IX_COUNT; w++) {
        if (!a->schedulable) {
            idx_remove(&p->ix[w], a, w);
            continue;
        }
        int k = agent_key(a, w);
        if (k == a->bucket[w]) continue;
        idx_remove(&p->ix[w], a, w);
        idx_insert(&p->ix[w], a, w, k);
    }
}

/* ---- group ----------------------------------------------------------------------------- */

bool sched_selector_parse(const char *name, sched_selector *out)
{
    static const char *names[] = {"concentrated", "dispersed", "roundrobin"};
    for (int i = 0; i < 3; i++)
        if (name && strcmp(name, names[i]) == 0) {
            *out = (sched_selector)i;
            return true;
        }
    return false;
}

const char *sched_selector_name(sched_selector s)
{
    return s == SCHED_DISPERSED    ? "dispersed"
           : s == SCHED_ROUNDROBIN ? "roundrobin"
                                   : "concentrated";
}

const char *sched_fit_code(sched_fit f)
{
    switch (f) {
    case SCHED_FIT_OK:
        return "ok";
    case SCHED_FIT_NO_AGENT:
        return "no_agent";
    case SCHED_FIT_TOO_BIG:
        return "too_big";
    case SCHED_FIT_SHORT:
        return "no_capacity";
    case SCHED_FIT_FRAGMENTED:
        return "fragmented";
    case SCHED_FIT_RESERVED:
        return "held_for_aged_session";
    }
    return "?";
}

sched_group *sched_group_new(const char *name, sched_selector selector)
{
    sched_group *g = ts_calloc(1, sizeof(*g));
    ts_strlcpy(g->name, name ? name : "", sizeof(g->name));
    g->selector = selector;
    g->by_id = strmap_new();
    return g;
}

void sched_group_free(sched_group *g)
{
    if (!g) return;
    strmap_free(g->by_id, free);
    for (int i = 0; i < g->npools; i++) {
        free(g->pools[i]->agents);
        free(g->pools[i]);
    }
    free(g->pools);
    free(g->all);
    free(g);
}

const char *sched_group_name(const sched_group *g)
{
    return g->name;
}

sched_selector sched_group_selector(const sched_group *g)
{
    return g->selector;
}

void sched_group_set_selector(sched_group *g, sched_selector selector)
{
    g->selector = selector;
}

static sched_pool *pool_for(sched_group *g, const char *arch, bool create)
{
    for (int i = 0; i < g->npools; i++)
        if (strcmp(g->pools[i]->arch, arch) == 0) return g->pools[i];
    if (!create) return NULL;
    sched_pool *p = ts_calloc(1, sizeof(*p));
    ts_strlcpy(p->arch, arch, sizeof(p->arch));
    g->pools = ts_realloc(g->pools, sizeof(*g->pools) * (size_t)(g->npools + 1));
    g->pools[g->npools++] = p;
    return p;
}

static void recompute_capacity(sched_group *g)
{
    slots_clear(&g->capacity);
    for (size_t i = 0; i < g->nall; i++)
        if (g->all[i]->schedulable) {
            ts_err e;
            if (!slots_add(&g->capacity, &g->all[i]->total, &e)) break;
        }
}

static void pool_recompute_max_dcap(sched_pool *p)
{
    p->max_dcap = 0;
    for (int i = 0; i < p->n; i++)
        for (int d = 0; d < p->agents[i]->ndev; d++)
            if (p->agents[i]->dev_cap[d] > p->max_dcap) p->max_dcap = p->agents[i]->dev_cap[d];
}

bool sched_group_set_agent(sched_group *g, const sched_agent_spec *spec, ts_err *err)
{
    if (!spec->id || !spec->id[0] || strlen(spec->id) >= SCHED_ID_MAX) {
        ts_err_set(err, "agent id must be 1 to %d characters", SCHED_ID_MAX - 1);
        return false;
    }
    const char *arch = spec->arch && spec->arch[0] ? spec->arch : "x86_64";
    if (strlen(arch) >= SCHED_ARCH_MAX || spec->ndev < 0 || spec->ndev > SCHED_MAX_DEVICES) {
        ts_err_set(err, "agent %s: bad architecture or device count", spec->id);
        return false;
    }
    slots_t total = spec->total;
    int64_t shares = 0;
    int32_t caps[SCHED_MAX_DEVICES];
    for (int d = 0; d < spec->ndev; d++) {
        caps[d] = spec->dev_cap[d] > 0 ? spec->dev_cap[d] : SLOT_SHARES_PER_DEVICE;
        shares += caps[d];
    }
    slots_put(&total, SLOT_CUDA_DEVICE, spec->ndev);
    slots_put(&total, SLOT_CUDA_SHARES, shares);
    sched_agent *a = strmap_get(g->by_id, spec->id);
    if (a) {
        if (spec->ndev < a->ndev) {
            for (int d = spec->ndev; d < a->ndev; d++)
                if (a->dev_used[d]) {
                    ts_err_set(err, "agent %s: device %d is occupied and cannot go", a->id, d);
                    return false;
                }
        }
        for (int d = 0; d < spec->ndev && d < a->ndev; d++)
            if (a->dev_used[d] > caps[d]) {
                ts_err_set(err, "agent %s: device %d holds more than its new capacity", a->id, d);
                return false;
            }
        int s = slots_short(&a->used, &total);
        if (s >= 0) {
            ts_err_set(err, "agent %s: occupied %s is above the new capacity", a->id, slot_name(s));
            return false;
        }
        if (strcmp(a->pool->arch, arch) != 0) {
            ts_err_set(err, "agent %s: architecture cannot change (%s -> %s)", a->id, a->pool->arch,
                       arch);
            return false;
        }
        /* Every heartbeat says it again: nothing changed, nothing to recount
         * (the group's capacity is a sum over all its agents). */
        if (a->schedulable == spec->schedulable && a->ndev == spec->ndev &&
            memcmp(a->dev_cap, caps, sizeof(int32_t) * (size_t)spec->ndev) == 0 &&
            slots_equal(&a->total, &total))
            return true;
    } else {
        a = ts_calloc(1, sizeof(*a));
        ts_strlcpy(a->id, spec->id, sizeof(a->id));
        ts_strlcpy(a->arch, arch, sizeof(a->arch));
        for (int w = 0; w < IX_COUNT; w++)
            a->bucket[w] = -1;
        sched_pool *p = pool_for(g, arch, true);
        if (p->n == p->cap) {
            p->cap = p->cap ? p->cap * 2 : 64;
            p->agents = ts_realloc(p->agents, sizeof(*p->agents) * (size_t)p->cap);
        }
        a->pool = p;
        a->pos = p->n;
        p->agents[p->n++] = a;
        if (g->nall == g->capall) {
            g->capall = g->capall ? g->capall * 2 : 64;
            g->all = ts_realloc(g->all, sizeof(*g->all) * g->capall);
        }
        g->all[g->nall++] = a;
        strmap_put(g->by_id, a->id, a);
    }
    a->total = total;
    for (int d = spec->ndev; d < a->ndev; d++)
        a->dev_used[d] = 0;
    a->ndev = spec->ndev;
    memcpy(a->dev_cap, caps, sizeof(int32_t) * (size_t)spec->ndev);
    a->schedulable = spec->schedulable;
    pool_recompute_max_dcap(a->pool);
    reindex(a);
    recompute_capacity(g);
    return true;
}

bool sched_group_remove_agent(sched_group *g, const char *id)
{
    sched_agent *a = strmap_del(g->by_id, id);
    if (!a) return false;
    sched_pool *p = a->pool;
    for (int w = 0; w < IX_COUNT; w++)
        idx_remove(&p->ix[w], a, w);
    p->agents[a->pos] = p->agents[--p->n];
    p->agents[a->pos]->pos = a->pos;
    if (p->rr >= p->n) p->rr = 0;
    for (size_t i = 0; i < g->nall; i++)
        if (g->all[i] == a) {
            memmove(&g->all[i], &g->all[i + 1], sizeof(*g->all) * (g->nall - i - 1));
            g->nall--;
            break;
        }
    if (a->reserved_for[0]) g->held--;
    free(a);
    pool_recompute_max_dcap(p);
    recompute_capacity(g);
    return true;
}

sched_agent *sched_group_agent(const sched_group *g, const char *id)
{
    return strmap_get(g->by_id, id);
}

size_t sched_group_agent_count(const sched_group *g)
{
    return g->nall;
}

sched_agent *sched_group_agent_at(const sched_group *g, size_t i)
{
    return i < g->nall ? g->all[i] : NULL;
}

void sched_group_set_schedulable(sched_group *g, sched_agent *a, bool on)
{
    a->schedulable = on;
    reindex(a);
    recompute_capacity(g);
}

bool sched_group_set_usage(sched_group *g, sched_agent *a, const slots_t *used,
                           const int32_t *dev_used, ts_err *err)
{
    (void)g;
    int s = slots_short(used, &a->total);
    if (s >= 0) {
        ts_err_set(err, "agent %s: occupied %s above capacity", a->id, slot_name(s));
        return false;
    }
    for (int d = 0; d < a->ndev; d++)
        if (dev_used && (dev_used[d] < 0 || dev_used[d] > a->dev_cap[d])) {
            ts_err_set(err, "agent %s: device %d occupancy out of range", a->id, d);
            return false;
        }
    a->used = *used;
    for (int d = 0; d < a->ndev; d++)
        a->dev_used[d] = dev_used ? dev_used[d] : 0;
    reindex(a);
    return true;
}

const slots_t *sched_group_capacity(const sched_group *g)
{
    return &g->capacity;
}

void sched_group_hold(sched_group *g, sched_agent *a, const char *session_id)
{
    bool was = a->reserved_for[0] != '\0';
    ts_strlcpy(a->reserved_for, session_id ? session_id : "", sizeof(a->reserved_for));
    g->held += (a->reserved_for[0] != '\0') - was;
}

int sched_group_held_count(const sched_group *g)
{
    return g->held;
}

/* ---- fitting one agent ------------------------------------------------------------------ */

bool sched_agent_fit(const sched_agent *a, const slots_t *req, sched_pick *out)
{
    if (!a->schedulable) return false;
    uint32_t m = req->mask & ~((1u << SLOT_CUDA_DEVICE) | (1u << SLOT_CUDA_SHARES));
    while (m) {
        int i = __builtin_ctz(m);
        m &= m - 1;
        if (req->v[i] > 0 && req->v[i] > slots_get(&a->total, i) - slots_get(&a->used, i))
            return false;
    }
    int64_t n = slots_get(req, SLOT_CUDA_DEVICE), rem = slots_get(req, SLOT_CUDA_SHARES);
    out->agent = (sched_agent *)a;
    out->ndev = 0;
    if (n <= 0 && rem <= 0) return true;
    if (n > a->ndev) return false;
    uint32_t taken = 0;
    for (int d = 0; d < a->ndev && n > 0; d++)
        if (a->dev_used[d] == 0 && a->dev_cap[d] > 0) {
            taken |= 1u << d;
            out->dev[out->ndev++] = (sched_devalloc){(uint8_t)d, true, a->dev_cap[d]};
            n--;
        }
    if (n > 0) return false;
    if (rem <= 0) return true;
    int32_t maxcap = 0;
    for (int d = 0; d < a->ndev; d++)
        if (!(taken >> d & 1u) && a->dev_cap[d] > maxcap) maxcap = a->dev_cap[d];
    if (rem > maxcap) { /* whole free devices first, largest capacity first */
        for (;;) {
            int best = -1;
            for (int d = 0; d < a->ndev; d++)
                if (!(taken >> d & 1u) && a->dev_used[d] == 0 && a->dev_cap[d] <= rem &&
                    a->dev_cap[d] > 0 && (best < 0 || a->dev_cap[d] > a->dev_cap[best]))
                    best = d;
            if (best < 0) break;
            taken |= 1u << best;
            out->dev[out->ndev++] = (sched_devalloc){(uint8_t)best, false, a->dev_cap[best]};
            rem -= a->dev_cap[best];
            if (rem == 0) return true;
        }
    }
    int best = -1; /* the remainder on ONE device: best fit */
    int32_t best_free = 0;
    for (int d = 0; d < a->ndev; d++) {
        int32_t f = a->dev_cap[d] - a->dev_used[d];
        if (!(taken >> d & 1u) && f >= rem && (best < 0 || f < best_free)) {
            best = d;
            best_free = f;
        }
    }
    if (best < 0) return false;
    out->dev[out->ndev++] = (sched_devalloc){(uint8_t)best, false, (int32_t)rem};
    return true;
}

static bool usable(const sched_agent *a, const char *session_id)
{
    return !a->reserved_for[0] || (session_id && strcmp(a->reserved_for, session_id) == 0);
}

/* Try the agents of bucket b of index w; true when one fits. */
static bool try_bucket(const sched_pool *p, int w, int b, const slots_t *req, const char *sid,
                       int skip_freedev, sched_pick *out)
{
    for (sched_agent *a = p->ix[w].head[b]; a; a = a->next[w]) {
        if (skip_freedev && a->bucket[IX_FREEDEV] > 0) continue;
        if (usable(a, sid) && sched_agent_fit(a, req, out)) return true;
    }
    return false;
}

static bool scan_up(const sched_pool *p, int w, int from, const slots_t *req, const char *sid,
                    sched_pick *out)
{
    for (int b = idx_next(&p->ix[w], from); b >= 0; b = idx_next(&p->ix[w], b + 1))
        if (try_bucket(p, w, b, req, sid, 0, out)) return true;
    return false;
}

static bool scan_down(const sched_pool *p, int w, int to, const slots_t *req, const char *sid,
                      int skip_freedev, sched_pick *out)
{
    if (to < 0) to = 0;
    for (int b = idx_prev(&p->ix[w], NBKT - 1); b >= to; b = b ? idx_prev(&p->ix[w], b - 1) : -1)
        if (try_bucket(p, w, b, req, sid, skip_freedev, out)) return true;
    return false;
}

static bool place_in_pool(sched_group *g, sched_pool *p, const slots_t *req, const char *sid,
                          sched_pick *out)
{
    if (g->selector == SCHED_ROUNDROBIN) {
        for (int i = 0; i < p->n; i++) {
            int k = (p->rr + i) % p->n;
            sched_agent *a = p->agents[k];
            if (usable(a, sid) && sched_agent_fit(a, req, out)) {
                p->rr = (k + 1) % p->n;
                return true;
            }
        }
        return false;
    }
    bool conc = g->selector == SCHED_CONCENTRATED;
    int64_t n = slots_get(req, SLOT_CUDA_DEVICE), r = slots_get(req, SLOT_CUDA_SHARES);
    if (n > 0 || r > p->max_dcap) { /* whole free devices needed */
        int lb = (int)(n + (p->max_dcap > 0 ? r / p->max_dcap : 0));
        return conc ? scan_up(p, IX_FREEDEV, lb, req, sid, out)
                    : scan_down(p, IX_FREEDEV, lb, req, sid, 0, out);
    }
    if (r > 0) { /* fractional, on one device */
        int lb = clamp_bucket(r);
        if (conc) return scan_up(p, IX_DEVFREE, lb, req, sid, out);
        return scan_down(p, IX_FREEDEV, 1, req, sid, 0, out) ||
               scan_down(p, IX_DEVFREE, lb, req, sid, 1, out);
    }
    int lb = clamp_bucket(slots_get(req, SLOT_CPU) / 1000);
    return conc ? scan_up(p, IX_CPU, lb, req, sid, out)
                : scan_down(p, IX_CPU, lb, req, sid, 0, out);
}

bool sched_group_place(sched_group *g, const slots_t *req, const char *arch, const char *session_id,
                       sched_agent *only, sched_pick *out)
{
    if (only) return usable(only, session_id) && sched_agent_fit(only, req, out);
    for (int i = 0; i < g->npools; i++) {
        sched_pool *p = g->pools[i];
        if (arch && arch[0] && strcmp(p->arch, arch) != 0) continue;
        if (place_in_pool(g, p, req, session_id, out)) return true;
    }
    return false;
}

void sched_group_commit(sched_group *g, const sched_pick *p, const slots_t *req)
{
    (void)g;
    sched_agent *a = p->agent;
    ts_err e;
    if (!slots_add(&a->used, req, &e)) ts_panic("commit on agent %s: %s", a->id, e.msg);
    for (int i = 0; i < p->ndev; i++) {
        a->dev_used[p->dev[i].dev] += p->dev[i].shares;
        ts_assert(a->dev_used[p->dev[i].dev] <= a->dev_cap[p->dev[i].dev]);
    }
    reindex(a);
}

bool sched_group_uncommit(sched_group *g, sched_agent *a, const slots_t *req,
                          const sched_devalloc *dev, int ndev, ts_err *err)
{
    (void)g;
    for (int i = 0; i < ndev; i++)
        if (dev[i].dev >= a->ndev || a->dev_used[dev[i].dev] < dev[i].shares) {
            ts_err_set(err, "agent %s: device %d does not hold what is released", a->id,
                       dev[i].dev);
            return false;
        }
    if (!slots_sub(&a->used, req, err)) {
        ts_err_prefix(err, "agent %s", a->id);
        return false;
    }
    for (int i = 0; i < ndev; i++)
        a->dev_used[dev[i].dev] -= dev[i].shares;
    reindex(a);
    return true;
}

/* ---- explaining a failure --------------------------------------------------------------- */

typedef struct survey {
    int agents;          /* schedulable, of the architecture */
    int drained;         /* not schedulable because drained */
    int fit_total;       /* agents whose capacity could hold req at all */
    int fit_held;        /* agents that fit now but are held for another session */
    slots_t max_free;    /* per slot, the most free on one usable agent */
    slots_t max_total;   /* per slot, the largest capacity */
    int32_t best_dev;    /* most free shares on one device */
    int64_t free_shares; /* free shares over all usable agents */
    int max_freedev;
} survey;

static void survey_agent(survey *s, const sched_agent *a, const slots_t *req, const char *sid)
{
    if (!a->schedulable) {
        s->drained += a->drained;
        return;
    }
    s->agents++;
    sched_agent empty = *a;
    slots_clear(&empty.used);
    memset(empty.dev_used, 0, sizeof(empty.dev_used));
    sched_pick pk;
    if (sched_agent_fit(&empty, req, &pk)) s->fit_total++;
    for (int i = 0; i < SLOTS_MAX; i++)
        if (slots_get(&a->total, i) > slots_get(&s->max_total, i))
            slots_put(&s->max_total, i, slots_get(&a->total, i));
    if (!usable(a, sid)) {
        if (sched_agent_fit(a, req, &pk)) s->fit_held++;
        return;
    }
    for (int i = 0; i < SLOTS_MAX; i++) {
        int64_t f = slots_get(&a->total, i) - slots_get(&a->used, i);
        if (f > slots_get(&s->max_free, i)) slots_put(&s->max_free, i, f);
    }
    int nfree = 0;
    for (int d = 0; d < a->ndev; d++) {
        int32_t f = a->dev_cap[d] - a->dev_used[d];
        if (f > s->best_dev) s->best_dev = f;
        s->free_shares += f;
        nfree += a->dev_used[d] == 0;
    }
    if (nfree > s->max_freedev) s->max_freedev = nfree;
}

sched_fit sched_group_explain(const sched_group *g, const slots_t *req, const char *arch,
                              const char *session_id, char *reason, size_t size)
{
    survey s;
    memset(&s, 0, sizeof(s));
    for (int i = 0; i < g->npools; i++) {
        const sched_pool *p = g->pools[i];
        if (arch && arch[0] && strcmp(p->arch, arch) != 0) continue;
        for (int k = 0; k < p->n; k++)
            survey_agent(&s, p->agents[k], req, session_id);
    }
    char a1[SLOT_FMT_MAX], a2[SLOT_FMT_MAX], a3[SLOT_FMT_MAX];
    if (s.agents == 0) {
        char drained[48] = "";
        if (s.drained) snprintf(drained, sizeof(drained), " (%d drained)", s.drained);
        snprintf(reason, size, "no schedulable agent%s%s in resource group %s%s",
                 arch && arch[0] ? " for architecture " : "", arch && arch[0] ? arch : "", g->name,
                 drained);
        return SCHED_FIT_NO_AGENT;
    }
    if (s.fit_total == 0) {
        int sh = slots_short(req, &s.max_total);
        if (sh >= 0)
            snprintf(reason, size,
                     "requested %s %s is more than any agent in resource group %s has (at most %s)",
                     slot_name(sh), slot_format(sh, req->v[sh], a1, sizeof(a1)), g->name,
                     slot_format(sh, slots_get(&s.max_total, sh), a2, sizeof(a2)));
        else
            snprintf(reason, size, "no agent in resource group %s can hold this request at all",
                     g->name);
        return SCHED_FIT_TOO_BIG;
    }
    if (s.fit_held > 0) {
        snprintf(reason, size,
                 "the agents with room in resource group %s are held for sessions waiting longer",
                 g->name);
        return SCHED_FIT_RESERVED;
    }
    int64_t n = slots_get(req, SLOT_CUDA_DEVICE), r = slots_get(req, SLOT_CUDA_SHARES);
    uint32_t m = req->mask & ~((1u << SLOT_CUDA_DEVICE) | (1u << SLOT_CUDA_SHARES));
    while (m) {
        int i = __builtin_ctz(m);
        m &= m - 1;
        if (req->v[i] > slots_get(&s.max_free, i)) {
            snprintf(reason, size,
                     "not enough %s in resource group %s (%s requested, at most %s free on one "
                     "agent)",
                     slot_name(i), g->name, slot_format(i, req->v[i], a1, sizeof(a1)),
                     slot_format(i, slots_get(&s.max_free, i), a2, sizeof(a2)));
            return SCHED_FIT_SHORT;
        }
    }
    int64_t whole_needed = n + (r > SLOT_SHARES_PER_DEVICE ? r / SLOT_SHARES_PER_DEVICE : 0);
    if (r > 0 && s.free_shares < r + n * SLOT_SHARES_PER_DEVICE) {
        snprintf(reason, size,
                 "not enough cuda.shares in resource group %s (%s requested, %s free in total)",
                 g->name, slot_format(SLOT_CUDA_SHARES, r, a1, sizeof(a1)),
                 slot_format(SLOT_CUDA_SHARES, s.free_shares, a2, sizeof(a2)));
        return SCHED_FIT_SHORT;
    }
    if (whole_needed > s.max_freedev) {
        bool frag = s.free_shares >= n * SLOT_SHARES_PER_DEVICE + r;
        snprintf(reason, size,
                 "not enough %s in resource group %s (%lld entirely free devices needed, at "
                 "most %d on one agent%s)",
                 n > 0 ? "cuda.device" : "cuda.shares", g->name, (long long)whole_needed,
                 s.max_freedev,
                 frag ? "; fragmented: the free shares are spread over partly used devices" : "");
        return frag ? SCHED_FIT_FRAGMENTED : SCHED_FIT_SHORT;
    }
    int64_t part = r > SLOT_SHARES_PER_DEVICE ? r % SLOT_SHARES_PER_DEVICE : r;
    if (part > 0 && part > s.best_dev) {
        snprintf(reason, size,
                 "not enough cuda.shares in resource group %s (fragmented: %s free on the best "
                 "device, %s needed on one device, %s free in total)",
                 g->name, slot_format(SLOT_CUDA_SHARES, s.best_dev, a1, sizeof(a1)),
                 slot_format(SLOT_CUDA_SHARES, part, a2, sizeof(a2)),
                 slot_format(SLOT_CUDA_SHARES, s.free_shares, a3, sizeof(a3)));
        return SCHED_FIT_FRAGMENTED;
    }
    char want[256];
    snprintf(reason, size, "not enough room in resource group %s: no single agent has %s free",
             g->name, slots_format(req, want, sizeof(want)));
    return SCHED_FIT_SHORT;
}

/* ---- aging: which agent to hold ---------------------------------------------------------- */

sched_agent *sched_group_pick_hold(sched_group *g, const slots_t *req, const char *arch,
                                   const char *session_id)
{
    sched_agent *best = NULL;
    double best_score = 0;
    for (size_t i = 0; i < g->nall; i++) {
        sched_agent *a = g->all[i];
        if (!a->schedulable || !usable(a, session_id)) continue;
        if (arch && arch[0] && strcmp(a->arch, arch) != 0) continue;
        sched_agent empty = *a;
        slots_clear(&empty.used);
        memset(empty.dev_used, 0, sizeof(empty.dev_used));
        sched_pick pk;
        if (!sched_agent_fit(&empty, req, &pk)) continue;
        /* shortage now, each slot relative to the agent's capacity */
        double score = 0;
        for (int s = 0; s < SLOTS_MAX; s++) {
            int64_t want = slots_get(req, s);
            if (want <= 0 || s == SLOT_CUDA_SHARES || s == SLOT_CUDA_DEVICE) continue;
            int64_t f = slots_get(&a->total, s) - slots_get(&a->used, s);
            if (want > f) score += (double)(want - f) / (double)slots_get(&a->total, s);
        }
        int64_t gpu = slots_get(req, SLOT_CUDA_DEVICE) * SLOT_SHARES_PER_DEVICE +
                      slots_get(req, SLOT_CUDA_SHARES);
        if (gpu > 0) {
            int64_t freesh = 0, cap = 0;
            for (int d = 0; d < a->ndev; d++) {
                freesh += a->dev_cap[d] - a->dev_used[d];
                cap += a->dev_cap[d];
            }
            if (gpu > freesh) score += (double)(gpu - freesh) / (double)cap;
            score += 0.001 * (double)(cap - freesh) / (double)cap; /* emptier is better */
        }
        if (!best || score < best_score) {
            best = a;
            best_score = score;
        }
    }
    return best;
}
