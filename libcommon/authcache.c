/* authcache.c: see authcache.h. Each shard is a chained hash table for the
 * look-ups and a doubly linked list in order of use for the eviction, under
 * one mutex; an entry being fetched (coalescing) stays in place, and neither
 * drops nor evictions free it: its fetcher settles or removes it. */
#include "libcommon/authcache.h"

#include "libcommon/metrics.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef enum entry_state { E_FOUND, E_NOT_FOUND, E_FETCHING, E_ERROR } entry_state;

typedef struct entry {
    struct entry *next;          /* hash chain */
    struct entry *newer, *older; /* use order */
    uint64_t hash;
    entry_state state;
    char *access_key;
    char *variant; /* NULL: none */
    char *user_id; /* E_FOUND: the value's user ("" when none) */
    void *value;   /* E_FOUND */
    char *error;   /* E_ERROR */
    int64_t expires_ms;
} entry;

typedef struct shard {
    pthread_mutex_t mu;
    pthread_cond_t fetched; /* broadcast whenever a fetch in this shard ends */
    entry **buckets;
    size_t nbuckets; /* a power of two */
    size_t n, max;
    entry *newest, *oldest;
} shard;

struct authcache {
    authcache_opts o;
    shard *shards;
    unsigned nshards;
    _Atomic uint64_t gen; /* advanced by every drop */
    _Atomic uint64_t hits, negative_hits, misses, expired, coalesced, fetch_errors, stored, stale,
        evicted, inval_key, inval_user, inval_all, dropped;
};

static void _count(_Atomic uint64_t *counter, uint64_t n)
{
    atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

static int64_t _now(const authcache *c)
{
    return c->o.now_ms ? c->o.now_ms() : ts_now_mono_ms();
}

static bool _cacheable(const char *ak, const char *variant)
{
    return ak && *ak && strlen(ak) <= AUTHCACHE_KEY_MAX &&
           (!variant || strlen(variant) <= AUTHCACHE_VARIANT_MAX);
}

/* The shard comes from the access key alone (a key's variants share it);
 * the bucket from the key and the variant. */
static uint64_t _key_hash(const char *ak)
{
    return ts_fnv1a(TS_FNV_OFFSET, ak, strlen(ak));
}

static uint64_t _full_hash(uint64_t kh, const char *variant)
{
    uint8_t mark = variant ? 1 : 0;
    uint64_t h = ts_fnv1a(kh, &mark, 1);
    return variant ? ts_fnv1a(h, variant, strlen(variant)) : h;
}

static shard *_shard_of(authcache *c, uint64_t kh)
{
    return &c->shards[kh % c->nshards];
}

authcache *authcache_new(const authcache_opts *o)
{
    authcache *c = ts_calloc(1, sizeof(*c));
    c->o = *o;
    if (c->o.max_entries < 1) c->o.max_entries = 1;
    c->nshards = o->shards > 1 ? o->shards : 1;
    c->shards = ts_calloc(c->nshards, sizeof(*c->shards));
    size_t per = (c->o.max_entries + c->nshards - 1) / c->nshards;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    for (unsigned i = 0; i < c->nshards; i++) {
        shard *sh = &c->shards[i];
        pthread_mutex_init(&sh->mu, NULL);
        pthread_cond_init(&sh->fetched, &ca);
        sh->max = per;
        sh->nbuckets = 16;
        while (sh->nbuckets < per && sh->nbuckets < ((size_t)1 << 20))
            sh->nbuckets *= 2;
        sh->buckets = ts_calloc(sh->nbuckets, sizeof(*sh->buckets));
    }
    pthread_condattr_destroy(&ca);
    return c;
}

/* Release what an entry holds, keeping the entry (locked or unlinked). */
static void _clear(authcache *c, entry *e)
{
    if (e->value) c->o.free(e->value);
    e->value = NULL;
    free(e->user_id);
    e->user_id = NULL;
    free(e->error);
    e->error = NULL;
}

static void _entry_free(authcache *c, entry *e)
{
    _clear(c, e);
    free(e->access_key);
    free(e->variant);
    free(e);
}

static bool _same(const entry *e, uint64_t h, const char *ak, const char *variant)
{
    if (e->hash != h || strcmp(e->access_key, ak) != 0) return false;
    if (!e->variant || !variant) return !e->variant && !variant;
    return strcmp(e->variant, variant) == 0;
}

static entry *_find(shard *sh, uint64_t h, const char *ak, const char *variant)
{
    for (entry *e = sh->buckets[h & (sh->nbuckets - 1)]; e; e = e->next)
        if (_same(e, h, ak, variant)) return e;
    return NULL;
}

/* Unlink e from its chain and the use order (locked); the caller frees it. */
static void _unlink(shard *sh, entry *e)
{
    entry **pp = &sh->buckets[e->hash & (sh->nbuckets - 1)];
    while (*pp != e)
        pp = &(*pp)->next;
    *pp = e->next;
    if (e->newer)
        e->newer->older = e->older;
    else
        sh->newest = e->older;
    if (e->older)
        e->older->newer = e->newer;
    else
        sh->oldest = e->newer;
    sh->n--;
}

/* Move e to the front of the use order (locked). */
static void _touch(shard *sh, entry *e)
{
    if (sh->newest == e) return;
    e->newer->older = e->older; /* e is not the newest, so it has a newer one */
    if (e->older)
        e->older->newer = e->newer;
    else
        sh->oldest = e->newer;
    e->newer = NULL;
    e->older = sh->newest;
    sh->newest->newer = e;
    sh->newest = e;
}

/* A new entry for (ak, variant), the newest, after evicting the least
 * recently used settled entries a full shard needs gone (locked). */
static entry *_insert(authcache *c, shard *sh, uint64_t h, const char *ak, const char *variant)
{
    for (entry *v = sh->oldest, *newer; v && sh->n >= sh->max; v = newer) {
        newer = v->newer;
        if (v->state == E_FETCHING) continue; /* its fetcher still holds it */
        _unlink(sh, v);
        _entry_free(c, v);
        _count(&c->evicted, 1);
    }
    entry *e = ts_calloc(1, sizeof(*e));
    e->hash = h;
    e->access_key = ts_strdup(ak);
    e->variant = variant ? ts_strdup(variant) : NULL;
    entry **head = &sh->buckets[h & (sh->nbuckets - 1)];
    e->next = *head;
    *head = e;
    e->older = sh->newest;
    if (sh->newest) sh->newest->newer = e;
    sh->newest = e;
    if (!sh->oldest) sh->oldest = e;
    sh->n++;
    return e;
}

/* Keep an answer in e (locked): keep is the cache's copy (FOUND) or NULL. */
static void _settle(authcache *c, entry *e, authcache_result r, void *keep, int64_t now)
{
    _clear(c, e);
    e->state = r == AUTHCACHE_FOUND ? E_FOUND : E_NOT_FOUND;
    e->value = keep;
    const char *uid = keep && c->o.user_of ? c->o.user_of(keep) : NULL;
    e->user_id = ts_strdup(uid ? uid : "");
    e->expires_ms = now + (r == AUTHCACHE_FOUND ? c->o.ttl_ms : c->o.negative_ttl_ms);
    _count(&c->stored, 1);
}

/* Wait (shard locked) for a fetch in this shard to end; false on timeout. */
static bool _wait_fetch(shard *sh, int64_t deadline_ms)
{
    int64_t left = deadline_ms - ts_now_mono_ms();
    if (left <= 0) return false;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += left / 1000;
    ts.tv_nsec += (left % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    int rc = pthread_cond_timedwait(&sh->fetched, &sh->mu, &ts);
    return rc != ETIMEDOUT || ts_now_mono_ms() < deadline_ms;
}

static authcache_result _fetch(authcache *c, const char *ak, const char *variant, void *arg,
                               void **value, ts_err *err)
{
    *value = NULL;
    authcache_result r = c->o.fetch(c->o.fetch_ctx, ak, variant, arg, value, err);
    if (r == AUTHCACHE_UNAVAILABLE) _count(&c->fetch_errors, 1);
    if (r != AUTHCACHE_FOUND && *value) {
        c->o.free(*value);
        *value = NULL;
    }
    return r;
}

/* A live entry's answer for a get (locked); false when it is past its time. */
static bool _answer(authcache *c, shard *sh, entry *e, bool waited, int64_t now, void **value,
                    authcache_result *r, ts_err *err)
{
    if (e->state == E_ERROR) {
        if (!waited && e->expires_ms <= now) return false;
        ts_err_set(err, "%s", e->error);
        *r = AUTHCACHE_UNAVAILABLE;
        return true;
    }
    if (e->expires_ms <= now) {
        _count(&c->expired, 1);
        return false;
    }
    _touch(sh, e);
    *r = e->state == E_FOUND ? AUTHCACHE_FOUND : AUTHCACHE_NOT_FOUND;
    if (*r == AUTHCACHE_FOUND) *value = c->o.copy(e->value);
    _count(*r == AUTHCACHE_FOUND ? &c->hits : &c->negative_hits, 1);
    return true;
}

authcache_result authcache_get(authcache *c, const char *ak, const char *variant, void *arg,
                               void **value, ts_err *err)
{
    *value = NULL;
    if (!_cacheable(ak, variant)) {
        _count(&c->misses, 1);
        return _fetch(c, ak, variant, arg, value, err);
    }
    uint64_t kh = _key_hash(ak), h = _full_hash(kh, variant);
    shard *sh = _shard_of(c, kh);
    bool coalesce = c->o.wait_ms > 0, waited = false;
    int64_t deadline = 0;
    authcache_result r;

    pthread_mutex_lock(&sh->mu);
    entry *e;
    while ((e = _find(sh, h, ak, variant)) && e->state == E_FETCHING) {
        /* Another request is asking the source about this key: wait for it. */
        if (!waited) {
            waited = true;
            _count(&c->coalesced, 1);
            deadline = ts_now_mono_ms() + c->o.wait_ms;
        }
        if (!_wait_fetch(sh, deadline)) {
            pthread_mutex_unlock(&sh->mu);
            ts_err_set(err, "timed out waiting for another request's look-up of this access key");
            _count(&c->fetch_errors, 1);
            return AUTHCACHE_UNAVAILABLE;
        }
    }
    if (e && _answer(c, sh, e, waited, _now(c), value, &r, err)) {
        pthread_mutex_unlock(&sh->mu);
        return r;
    }
    /* A miss: this get fetches (with coalescing, others wait on its entry). */
    _count(&c->misses, 1);
    uint64_t gen = atomic_load(&c->gen);
    if (coalesce) {
        if (e)
            _touch(sh, e);
        else
            e = _insert(c, sh, h, ak, variant);
        _clear(c, e);
        e->state = E_FETCHING;
    } else if (e) {
        _unlink(sh, e);
        _entry_free(c, e);
        e = NULL;
    }
    pthread_mutex_unlock(&sh->mu);

    r = _fetch(c, ak, variant, arg, value, err);
    bool wanted = r == AUTHCACHE_FOUND       ? c->o.ttl_ms > 0
                  : r == AUTHCACHE_NOT_FOUND ? c->o.negative_ttl_ms > 0
                                             : false;
    if (wanted && c->o.may_keep) wanted = c->o.may_keep(c->o.may_keep_ctx);
    void *keep = wanted && r == AUTHCACHE_FOUND ? c->o.copy(*value) : NULL;

    pthread_mutex_lock(&sh->mu);
    bool fresh = atomic_load(&c->gen) == gen;
    if (wanted && !fresh) _count(&c->stale, 1);
    if (coalesce) {
        /* e is where it was: drops and evictions never free an entry being fetched. */
        if (r == AUTHCACHE_UNAVAILABLE) {
            e->state = E_ERROR;
            e->error = ts_strdup(err && err->msg[0] ? err->msg : "the source did not answer");
            e->expires_ms = _now(c) + c->o.error_ttl_ms;
        } else if (wanted && fresh) {
            _settle(c, e, r, keep, _now(c));
            keep = NULL;
        } else {
            /* Not kept: the waiters find no entry and fetch themselves. */
            _unlink(sh, e);
            _entry_free(c, e);
        }
        pthread_cond_broadcast(&sh->fetched);
    } else if (wanted && fresh) {
        entry *old = _find(sh, h, ak, variant);
        if (old) { /* another get kept it meanwhile: the newer answer replaces it */
            _unlink(sh, old);
            _entry_free(c, old);
        }
        _settle(c, _insert(c, sh, h, ak, variant), r, keep, _now(c));
        keep = NULL;
    }
    pthread_mutex_unlock(&sh->mu);
    if (keep) c->o.free(keep);
    return r;
}

/* ---- drops ------------------------------------------------------------------------ */

typedef bool (*entry_pred)(const entry *e, const char *arg);

/* Remove the settled entries of shards [from, to) for which pred holds.
 * The generation advances first, even when nothing matches: a fetch in
 * flight may be about to keep what the drop is about. */
static void _drop(authcache *c, unsigned from, unsigned to, entry_pred pred, const char *arg)
{
    atomic_fetch_add(&c->gen, 1);
    uint64_t n = 0;
    for (unsigned i = from; i < to; i++) {
        shard *sh = &c->shards[i];
        pthread_mutex_lock(&sh->mu);
        for (entry *e = sh->oldest, *newer; e; e = newer) {
            newer = e->newer;
            if (e->state == E_FETCHING || !pred(e, arg)) continue;
            _unlink(sh, e);
            _entry_free(c, e);
            n++;
        }
        pthread_mutex_unlock(&sh->mu);
    }
    _count(&c->dropped, n);
}

static bool _of_key(const entry *e, const char *ak)
{
    return strcmp(e->access_key, ak) == 0;
}

static bool _of_user(const entry *e, const char *user_id)
{
    return e->user_id && e->user_id[0] && strcmp(e->user_id, user_id) == 0;
}

static bool _any(const entry *e, const char *arg)
{
    (void)e;
    (void)arg;
    return true;
}

void authcache_drop_key(authcache *c, const char *ak)
{
    _count(&c->inval_key, 1);
    unsigned i = (unsigned)(_key_hash(ak) % c->nshards);
    _drop(c, i, i + 1, _of_key, ak);
}

void authcache_drop_user(authcache *c, const char *user_id)
{
    /* No user -> keys index: a user has few keys, the cache holds the keys in
     * use, and user changes are rare; scanning every shard is cheap enough. */
    _count(&c->inval_user, 1);
    _drop(c, 0, c->nshards, _of_user, user_id);
}

void authcache_drop_all(authcache *c)
{
    _count(&c->inval_all, 1);
    _drop(c, 0, c->nshards, _any, NULL);
}

void authcache_free(authcache *c)
{
    if (!c) return;
    for (unsigned i = 0; i < c->nshards; i++) {
        shard *sh = &c->shards[i];
        while (sh->oldest) {
            entry *e = sh->oldest;
            _unlink(sh, e);
            _entry_free(c, e);
        }
        free(sh->buckets);
        pthread_mutex_destroy(&sh->mu);
        pthread_cond_destroy(&sh->fetched);
    }
    free(c->shards);
    free(c);
}

/* ---- stats ------------------------------------------------------------------------ */

void authcache_stats_get(authcache *c, authcache_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (!c) return;
    out->hits = atomic_load(&c->hits);
    out->negative_hits = atomic_load(&c->negative_hits);
    out->misses = atomic_load(&c->misses);
    out->expired = atomic_load(&c->expired);
    out->coalesced = atomic_load(&c->coalesced);
    out->fetch_errors = atomic_load(&c->fetch_errors);
    out->stored = atomic_load(&c->stored);
    out->stale = atomic_load(&c->stale);
    out->evicted = atomic_load(&c->evicted);
    out->invalidated_key = atomic_load(&c->inval_key);
    out->invalidated_user = atomic_load(&c->inval_user);
    out->invalidated_all = atomic_load(&c->inval_all);
    out->dropped = atomic_load(&c->dropped);
    for (unsigned i = 0; i < c->nshards; i++) {
        pthread_mutex_lock(&c->shards[i].mu);
        out->entries += c->shards[i].n;
        pthread_mutex_unlock(&c->shards[i].mu);
    }
}

void authcache_metrics(FILE *out, authcache *c, const char *prefix, const char *what)
{
    authcache_stats st;
    authcache_stats_get(c, &st);
    const struct {
        const char *suffix, *help; /* help: %s is what */
        uint64_t value;
    } counters[] = {
        {"hits_total", "Look-ups of %s answered from the cache.", st.hits},
        {"negative_hits_total", "Look-ups of unknown %s answered from the cache.",
         st.negative_hits},
        {"misses_total", "Look-ups of %s that asked tessera-auth (expired entries included).",
         st.misses},
        {"expired_total", "Cached %s found past their TTL (counted as misses too).", st.expired},
        {"coalesced_total", "Look-ups of %s that waited for another request's fetch of the key.",
         st.coalesced},
        {"fetch_errors_total", "Look-ups of %s tessera-auth did not answer.", st.fetch_errors},
        {"stale_puts_total", "Fetched %s not kept: an invalidation happened meanwhile.", st.stale},
        {"evictions_total", "Least recently used %s evicted to stay within the bound.", st.evicted},
        {"dropped_total", "Cached %s dropped by tessera.auth.v1 events.", st.dropped},
    };
    char name[160], help[200];
    for (size_t i = 0; i < TS_ARRAY_LEN(counters); i++) {
        snprintf(name, sizeof(name), "%s_%s", prefix, counters[i].suffix);
        snprintf(help, sizeof(help), counters[i].help, what);
        metrics_family(out, name, "counter", help);
        metrics_sample_u64(out, name, NULL, counters[i].value);
    }
    snprintf(name, sizeof(name), "%s_invalidations_total", prefix);
    metrics_family(out, name, "counter", "Invalidations applied from tessera.auth.v1, by scope.");
    metrics_sample_u64(out, name, "scope=\"key\"", st.invalidated_key);
    metrics_sample_u64(out, name, "scope=\"user\"", st.invalidated_user);
    metrics_sample_u64(out, name, "scope=\"all\"", st.invalidated_all);
    snprintf(name, sizeof(name), "%s_entries", prefix);
    snprintf(help, sizeof(help), "Cached %s now (known, unknown, being fetched).", what);
    metrics_family(out, name, "gauge", help);
    metrics_sample_u64(out, name, NULL, st.entries);
}
