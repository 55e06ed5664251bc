/* queue.c: pending sessions kept sorted by (priority desc, enqueue order asc);
 * the iterator walks bands forward (fifo), backward (lifo) or by user share
 * (drf). */
#include "services/scheduler/queue.h"

#include "services/scheduler/strmap.h"

#include <stdlib.h>
#include <string.h>

struct sched_queue {
    sched_order order;
    sched_session **a; /* sorted; NULL where a session was taken */
    size_t n, cap, live;
    bool sorted;
    uint64_t seq;
    strmap *by_id;
    strmap *usage; /* user id -> slots_t* */
};

bool sched_order_parse(const char *name, sched_order *out)
{
    static const char *names[] = {"fifo", "lifo", "drf"};
    for (int i = 0; i < 3; i++)
        if (name && strcmp(name, names[i]) == 0) {
            *out = (sched_order)i;
            return true;
        }
    return false;
}

const char *sched_order_name(sched_order o)
{
    return o == SCHED_LIFO ? "lifo" : o == SCHED_DRF ? "drf" : "fifo";
}

/* ---- sessions ------------------------------------------------------------------------- */

sched_session *sched_session_new(const char *id, int nkernels)
{
    sched_session *s = ts_calloc(1, sizeof(*s));
    ts_strlcpy(s->id, id ? id : "", sizeof(s->id));
    s->nkernels = nkernels > 0 ? nkernels : 1;
    s->kernels = ts_calloc((size_t)s->nkernels, sizeof(*s->kernels));
    s->qpos = -1;
    return s;
}

bool sched_session_finish(sched_session *s, ts_err *err)
{
    slots_clear(&s->total);
    for (int i = 0; i < s->nkernels; i++)
        if (!slots_add(&s->total, &s->kernels[i].slots, err)) {
            ts_err_prefix(err, "session %s", s->id);
            return false;
        }
    return true;
}

void sched_session_free(sched_session *s)
{
    if (!s) return;
    free(s->kernels);
    free(s);
}

/* ---- queue ------------------------------------------------------------------------------ */

sched_queue *sched_queue_new(sched_order order)
{
    sched_queue *q = ts_calloc(1, sizeof(*q));
    q->order = order;
    q->sorted = true;
    q->by_id = strmap_new();
    q->usage = strmap_new();
    return q;
}

void sched_queue_free(sched_queue *q)
{
    if (!q) return;
    for (size_t i = 0; i < q->n; i++)
        sched_session_free(q->a[i]);
    free(q->a);
    strmap_free(q->by_id, NULL);
    strmap_free(q->usage, free);
    free(q);
}

sched_order sched_queue_order(const sched_queue *q)
{
    return q->order;
}

void sched_queue_set_order(sched_queue *q, sched_order order)
{
    q->order = order;
}

static int cmp_sessions(const void *pa, const void *pb)
{
    const sched_session *a = *(sched_session *const *)pa, *b = *(sched_session *const *)pb;
    if (!a || !b) return (a == NULL) - (b == NULL); /* holes last */
    if (a->priority != b->priority) return a->priority > b->priority ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

bool sched_queue_push(sched_queue *q, sched_session *s, ts_err *err)
{
    if (strmap_get(q->by_id, s->id)) {
        ts_err_set(err, "session %s is already queued", s->id);
        return false;
    }
    s->seq = ++q->seq;
    if (q->n == q->cap) {
        q->cap = q->cap ? q->cap * 2 : 256;
        q->a = ts_realloc(q->a, sizeof(*q->a) * q->cap);
    }
    if (q->n > 0 && (!q->a[q->n - 1] || cmp_sessions(&q->a[q->n - 1], &s) > 0)) q->sorted = false;
    s->qpos = (int)q->n;
    q->a[q->n++] = s;
    q->live++;
    strmap_put(q->by_id, s->id, s);
    return true;
}

sched_session *sched_queue_find(const sched_queue *q, const char *id)
{
    return strmap_get(q->by_id, id);
}

void sched_queue_take(sched_queue *q, sched_session *s)
{
    if (s->qpos < 0 || (size_t)s->qpos >= q->n || q->a[s->qpos] != s) return;
    q->a[s->qpos] = NULL;
    s->qpos = -1;
    q->live--;
    strmap_del(q->by_id, s->id);
}

size_t sched_queue_len(const sched_queue *q)
{
    return q->live;
}

void sched_queue_charge(sched_queue *q, const char *user_id, const slots_t *slots, int sign)
{
    slots_t *u = strmap_get(q->usage, user_id);
    if (!u) {
        u = ts_calloc(1, sizeof(*u));
        strmap_put(q->usage, user_id, u);
    }
    ts_err e;
    if (sign > 0) {
        if (!slots_add(u, slots, &e)) return;
    } else if (!slots_sub(u, slots, &e)) {
        slots_clear(u); /* more released than charged: start again from zero */
    }
}

const slots_t *sched_queue_user_usage(const sched_queue *q, const char *user_id)
{
    static const slots_t zero;
    const slots_t *u = strmap_get(q->usage, user_id);
    return u ? u : &zero;
}

/* Drop the holes and sort, so that positions are dense and ordered. */
static void normalize(sched_queue *q)
{
    if (q->live == q->n && q->sorted) return;
    if (!q->sorted) qsort(q->a, q->n, sizeof(*q->a), cmp_sessions);
    size_t w = 0;
    for (size_t i = 0; i < q->n; i++)
        if (q->a[i]) {
            q->a[i]->qpos = (int)w;
            q->a[w++] = q->a[i];
        }
    q->n = w;
    q->sorted = true;
}

/* ---- iteration -------------------------------------------------------------------------- */

typedef struct drf_user {
    char user[SCHED_ID_MAX]; /* a copy: sessions are freed while the pass runs */
    size_t *idx;             /* positions in q->a, enqueue order */
    size_t n, cap, pos;
    double share;
} drf_user;

struct sched_queue_iter {
    sched_queue *q;
    const slots_t *capacity;
    size_t end;              /* sessions at the start of the pass */
    size_t band_lo, band_hi; /* current band [lo, hi) */
    size_t cur;              /* fifo/lifo cursor within the band */
    bool band_started;
    /* drf */
    drf_user *users;
    size_t nusers, capusers;
    strmap *user_ix;
    drf_user *last;
};

sched_queue_iter *sched_queue_iter_new(sched_queue *q, const slots_t *capacity)
{
    normalize(q);
    sched_queue_iter *it = ts_calloc(1, sizeof(*it));
    it->q = q;
    it->capacity = capacity;
    it->end = q->n;
    return it;
}

static void drf_reset(sched_queue_iter *it)
{
    for (size_t i = 0; i < it->nusers; i++)
        free(it->users[i].idx);
    it->nusers = 0;
    strmap_free(it->user_ix, NULL);
    it->user_ix = NULL;
    it->last = NULL;
}

void sched_queue_iter_free(sched_queue_iter *it)
{
    if (!it) return;
    drf_reset(it);
    free(it->users);
    free(it);
}

/* Move to the next band; false when there is none. */
static bool next_band(sched_queue_iter *it)
{
    sched_queue *q = it->q;
    size_t lo = it->band_started ? it->band_hi : 0;
    while (lo < it->end && !q->a[lo])
        lo++;
    if (lo >= it->end) return false;
    int prio = q->a[lo]->priority;
    size_t hi = lo + 1;
    while (hi < it->end && (!q->a[hi] || q->a[hi]->priority == prio))
        hi++;
    it->band_lo = lo;
    it->band_hi = hi;
    it->band_started = true;
    it->cur = q->order == SCHED_LIFO ? hi : lo;
    if (q->order == SCHED_DRF) {
        drf_reset(it);
        it->user_ix = strmap_new();
        for (size_t i = lo; i < hi; i++) {
            sched_session *s = q->a[i];
            if (!s) continue;
            drf_user *u = strmap_get(it->user_ix, s->user_id);
            if (!u) {
                if (it->nusers == it->capusers) {
                    /* pointers into users are kept in user_ix: rebuild them after growing */
                    it->capusers = it->capusers ? it->capusers * 2 : 16;
                    it->users = ts_realloc(it->users, sizeof(*it->users) * it->capusers);
                    for (size_t k = 0; k < it->nusers; k++)
                        strmap_put(it->user_ix, it->users[k].user, &it->users[k]);
                }
                u = &it->users[it->nusers++];
                memset(u, 0, sizeof(*u));
                ts_strlcpy(u->user, s->user_id, sizeof(u->user));
                u->share =
                    slots_dominant_share(sched_queue_user_usage(q, s->user_id), it->capacity);
                strmap_put(it->user_ix, u->user, u);
            }
            if (u->n == u->cap) {
                u->cap = u->cap ? u->cap * 2 : 8;
                u->idx = ts_realloc(u->idx, sizeof(*u->idx) * u->cap);
            }
            u->idx[u->n++] = i;
        }
    }
    return true;
}

static sched_session *drf_next(sched_queue_iter *it)
{
    sched_queue *q = it->q;
    if (it->last) /* its usage may have changed since we handed out its session */
        it->last->share =
            slots_dominant_share(sched_queue_user_usage(q, it->last->user), it->capacity);
    drf_user *best = NULL;
    for (size_t i = 0; i < it->nusers; i++) {
        drf_user *u = &it->users[i];
        while (u->pos < u->n && !q->a[u->idx[u->pos]])
            u->pos++;
        if (u->pos >= u->n) continue;
        if (!best || u->share < best->share ||
            (u->share == best->share &&
             q->a[u->idx[u->pos]]->seq < q->a[best->idx[best->pos]]->seq))
            best = u;
    }
    it->last = best;
    if (!best) return NULL;
    return q->a[best->idx[best->pos++]];
}

sched_session *sched_queue_iter_next(sched_queue_iter *it)
{
    sched_queue *q = it->q;
    if (!it->band_started && !next_band(it)) return NULL;
    for (;;) {
        sched_session *s = NULL;
        if (q->order == SCHED_DRF) {
            s = drf_next(it);
        } else if (q->order == SCHED_LIFO) {
            while (it->cur > it->band_lo && !s)
                s = q->a[--it->cur];
        } else {
            while (it->cur < it->band_hi && !s)
                s = q->a[it->cur++];
        }
        if (s) return s;
        if (!next_band(it)) return NULL;
    }
}
