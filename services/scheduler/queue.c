/* queue.c: pending sessions in priority bands. A band is an array in enqueue
 * order (a push appends: nothing is ever sorted) with a list per user (drf);
 * a taken session leaves a hole, skipped at the head and compacted away once
 * holes are half of a band, so a take costs O(1) amortized and a pass's walk
 * is bounded by what it hands out. The iterator walks bands from the highest
 * priority: forward (fifo), backward (lifo) or by user share (drf). */
#include "services/scheduler/queue.h"

#include "services/scheduler/strmap.h"

#include <stdlib.h>
#include <string.h>

/* compact a band (or user list) once holes pass half of it and this many */
#define COMPACT_MIN 32

typedef struct ulist {
    char user[SCHED_ID_MAX];
    sched_session **a; /* this user's sessions in the band, enqueue order; NULL = taken */
    size_t head, n, cap, live;
} ulist;

typedef struct band {
    int priority;
    sched_session **a; /* enqueue order; NULL = taken */
    size_t head, n, cap, live;
    strmap *by_user; /* user id -> ulist */
    ulist **users;
    size_t nusers, capusers;
} band;

struct sched_queue {
    sched_order order;
    band **bands; /* priority descending */
    size_t nbands, capbands, live;
    uint64_t seq;
    int iterating; /* open iterators: positions must hold, nothing is compacted */
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
    s->upos = -1;
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

/* ---- bands ------------------------------------------------------------------------------ */

static void grow(sched_session ***a, size_t n, size_t *cap)
{
    if (n < *cap) return;
    *cap = *cap ? *cap * 2 : 64;
    *a = ts_realloc(*a, sizeof(**a) * *cap);
}

static void free_band(band *b)
{
    for (size_t i = 0; i < b->nusers; i++) {
        free(b->users[i]->a);
        free(b->users[i]);
    }
    free(b->users);
    strmap_free(b->by_user, NULL);
    free(b->a);
    free(b);
}

/* The band of priority prio (binary search; bands are few), or where it goes. */
static size_t band_pos(const sched_queue *q, int prio, bool *found)
{
    size_t lo = 0, hi = q->nbands;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (q->bands[mid]->priority == prio) {
            *found = true;
            return mid;
        }
        if (q->bands[mid]->priority > prio)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

static band *band_of(const sched_queue *q, int prio)
{
    bool found;
    size_t i = band_pos(q, prio, &found);
    return found ? q->bands[i] : NULL;
}

static band *band_get(sched_queue *q, int prio)
{
    bool found;
    size_t i = band_pos(q, prio, &found);
    if (found) return q->bands[i];
    if (q->nbands == q->capbands) {
        q->capbands = q->capbands ? q->capbands * 2 : 4;
        q->bands = ts_realloc(q->bands, sizeof(*q->bands) * q->capbands);
    }
    memmove(&q->bands[i + 1], &q->bands[i], sizeof(*q->bands) * (q->nbands - i));
    band *b = ts_calloc(1, sizeof(*b));
    b->priority = prio;
    b->by_user = strmap_new();
    q->bands[i] = b;
    q->nbands++;
    return b;
}

static ulist *ulist_get(band *b, const char *user)
{
    ulist *u = strmap_get(b->by_user, user);
    if (u) return u;
    u = ts_calloc(1, sizeof(*u));
    ts_strlcpy(u->user, user, sizeof(u->user));
    if (b->nusers == b->capusers) {
        b->capusers = b->capusers ? b->capusers * 2 : 8;
        b->users = ts_realloc(b->users, sizeof(*b->users) * b->capusers);
    }
    b->users[b->nusers++] = u;
    strmap_put(b->by_user, u->user, u);
    return u;
}

/* Drop holes from a[head, n) once they are half of it; pos: the field to renumber. */
static void compact(sched_session **a, size_t *head, size_t *n, size_t live, bool user_pos)
{
    size_t span = *n - *head;
    if (span < COMPACT_MIN || live * 2 > span) return;
    size_t w = 0;
    for (size_t i = *head; i < *n; i++)
        if (a[i]) {
            if (user_pos)
                a[i]->upos = (int)w;
            else
                a[i]->qpos = (int)w;
            a[w++] = a[i];
        }
    *head = 0;
    *n = w;
}

/* Compaction and empty users / bands away; only with no iterator open. */
static void tidy(sched_queue *q, band *only)
{
    if (q->iterating) return;
    for (size_t bi = 0; bi < q->nbands;) {
        band *b = q->bands[bi];
        if (only && b != only) {
            bi++;
            continue;
        }
        if (b->live == 0) {
            free_band(b);
            memmove(&q->bands[bi], &q->bands[bi + 1], sizeof(*q->bands) * (q->nbands - bi - 1));
            q->nbands--;
            continue;
        }
        compact(b->a, &b->head, &b->n, b->live, false);
        for (size_t i = 0; i < b->nusers;) {
            ulist *u = b->users[i];
            if (u->live == 0) {
                strmap_del(b->by_user, u->user);
                free(u->a);
                free(u);
                b->users[i] = b->users[--b->nusers];
                continue;
            }
            compact(u->a, &u->head, &u->n, u->live, true);
            i++;
        }
        bi++;
    }
}

/* ---- queue ------------------------------------------------------------------------------ */

sched_queue *sched_queue_new(sched_order order)
{
    sched_queue *q = ts_calloc(1, sizeof(*q));
    q->order = order;
    q->by_id = strmap_new();
    q->usage = strmap_new();
    return q;
}

void sched_queue_free(sched_queue *q)
{
    if (!q) return;
    for (size_t bi = 0; bi < q->nbands; bi++) {
        band *b = q->bands[bi];
        for (size_t i = b->head; i < b->n; i++)
            sched_session_free(b->a[i]);
        free_band(b);
    }
    free(q->bands);
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

bool sched_queue_push(sched_queue *q, sched_session *s, ts_err *err)
{
    if (strmap_get(q->by_id, s->id)) {
        ts_err_set(err, "session %s is already queued", s->id);
        return false;
    }
    s->seq = ++q->seq;
    band *b = band_get(q, s->priority);
    grow(&b->a, b->n, &b->cap);
    s->qpos = (int)b->n;
    b->a[b->n++] = s;
    b->live++;
    ulist *u = ulist_get(b, s->user_id);
    grow(&u->a, u->n, &u->cap);
    s->upos = (int)u->n;
    u->a[u->n++] = s;
    u->live++;
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
    band *b = band_of(q, s->priority);
    if (!b || s->qpos < 0 || (size_t)s->qpos >= b->n || b->a[s->qpos] != s) return;
    b->a[s->qpos] = NULL;
    b->live--;
    while (b->head < b->n && !b->a[b->head])
        b->head++;
    ulist *u = strmap_get(b->by_user, s->user_id);
    if (u && s->upos >= 0 && (size_t)s->upos < u->n && u->a[s->upos] == s) {
        u->a[s->upos] = NULL;
        u->live--;
        while (u->head < u->n && !u->a[u->head])
            u->head++;
    }
    s->qpos = s->upos = -1;
    q->live--;
    strmap_del(q->by_id, s->id);
    if (q->iterating) return; /* iter_free tidies */
    if (b->live == 0) {
        tidy(q, b);
        return;
    }
    compact(b->a, &b->head, &b->n, b->live, false);
    if (!u) return;
    if (u->live > 0) {
        compact(u->a, &u->head, &u->n, u->live, true);
        return;
    }
    for (size_t i = 0; i < b->nusers; i++)
        if (b->users[i] == u) {
            b->users[i] = b->users[--b->nusers];
            break;
        }
    strmap_del(b->by_user, u->user);
    free(u->a);
    free(u);
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

/* ---- iteration -------------------------------------------------------------------------- */

struct sched_queue_iter {
    sched_queue *q;
    const slots_t *capacity;
    uint64_t snap; /* sessions pushed after the pass began (seq > snap) wait for the next */
    band *b;       /* current band (bands are not freed while an iterator is open) */
    size_t cur;    /* fifo / lifo cursor in b->a */
    /* drf: the band's users when it started, each with a cursor and a share */
    size_t nusers;
    size_t *pos;
    double *share;
    size_t capusers;
    long last; /* user handed out last (-1: none): its share is recomputed */
};

sched_queue_iter *sched_queue_iter_new(sched_queue *q, const slots_t *capacity)
{
    sched_queue_iter *it = ts_calloc(1, sizeof(*it));
    it->q = q;
    it->capacity = capacity;
    it->snap = q->seq;
    it->last = -1;
    q->iterating++;
    return it;
}

void sched_queue_iter_free(sched_queue_iter *it)
{
    if (!it) return;
    it->q->iterating--;
    tidy(it->q, NULL);
    free(it->pos);
    free(it->share);
    free(it);
}

/* Move to the next band (lower priority than the current one); false when none. */
static bool next_band(sched_queue_iter *it)
{
    sched_queue *q = it->q;
    band *nb = NULL;
    for (size_t i = 0; i < q->nbands && !nb; i++)
        if ((!it->b || q->bands[i]->priority < it->b->priority) && q->bands[i]->live > 0)
            nb = q->bands[i];
    it->b = nb;
    if (!nb) return false;
    it->cur = q->order == SCHED_LIFO ? nb->n : nb->head;
    if (q->order == SCHED_DRF) {
        if (nb->nusers > it->capusers) {
            it->capusers = nb->nusers;
            it->pos = ts_realloc(it->pos, sizeof(*it->pos) * it->capusers);
            it->share = ts_realloc(it->share, sizeof(*it->share) * it->capusers);
        }
        it->nusers = nb->nusers;
        for (size_t i = 0; i < it->nusers; i++) {
            ulist *u = nb->users[i];
            it->pos[i] = u->head;
            it->share[i] = slots_dominant_share(sched_queue_user_usage(q, u->user), it->capacity);
        }
        it->last = -1;
    }
    return true;
}

/* This user's next session of the pass (NULL: none left), its cursor past holes. */
static sched_session *user_head(sched_queue_iter *it, size_t i)
{
    ulist *u = it->b->users[i];
    if (it->pos[i] < u->head) it->pos[i] = u->head;
    while (it->pos[i] < u->n && !u->a[it->pos[i]])
        it->pos[i]++;
    if (it->pos[i] >= u->n || u->a[it->pos[i]]->seq > it->snap) return NULL;
    return u->a[it->pos[i]];
}

static sched_session *drf_next(sched_queue_iter *it)
{
    sched_queue *q = it->q;
    if (it->last >= 0) /* its usage may have changed since we handed out its session */
        it->share[it->last] = slots_dominant_share(
            sched_queue_user_usage(q, it->b->users[it->last]->user), it->capacity);
    long best = -1;
    sched_session *bs = NULL;
    for (size_t i = 0; i < it->nusers; i++) {
        sched_session *s = user_head(it, i);
        if (!s) continue;
        if (!bs || it->share[i] < it->share[best] ||
            (it->share[i] == it->share[best] && s->seq < bs->seq)) {
            best = (long)i;
            bs = s;
        }
    }
    it->last = best;
    if (bs) it->pos[best]++;
    return bs;
}

sched_session *sched_queue_iter_next(sched_queue_iter *it)
{
    sched_queue *q = it->q;
    if (!it->b && !next_band(it)) return NULL;
    for (;;) {
        band *b = it->b;
        sched_session *s = NULL;
        if (q->order == SCHED_DRF) {
            s = drf_next(it);
        } else if (q->order == SCHED_LIFO) {
            while (it->cur > b->head && !s) {
                s = b->a[--it->cur];
                if (s && s->seq > it->snap) s = NULL;
            }
        } else {
            if (it->cur < b->head) it->cur = b->head;
            while (it->cur < b->n && !s) {
                s = b->a[it->cur++];
                if (s && s->seq > it->snap) it->cur = b->n; /* the rest came after the pass began */
                if (s && s->seq > it->snap) s = NULL;
            }
        }
        if (s) return s;
        if (!next_band(it)) return NULL;
    }
}
