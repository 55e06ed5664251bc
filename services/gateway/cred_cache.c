/* cred_cache.c: the sharded access-key cache (see cred_cache.h). */
#include "cred_cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SHARDS 16
#define BUCKETS 256            /* per shard, chained */
#define SHARD_MAX_ENTRIES 4096 /* past this, expired and negative entries go first */
/* After a failed fetch, requests for that key fail fast for this long
 * instead of each waiting for auth's timeout. */
#define ERROR_TTL_MS 500

/* ENTRY_ERROR: the last fetch failed; requests that waited for it, and those
 * within ERROR_TTL_MS, get its error; later ones fetch again. */
typedef enum entry_state { ENTRY_FOUND, ENTRY_UNKNOWN, ENTRY_FETCHING, ENTRY_ERROR } entry_state;

typedef struct entry {
    struct entry *next;
    char access_key[SIGN_ACCESS_KEY_LEN + 1];
    entry_state state;
    bool dropped; /* ENTRY_FETCHING only: invalidated meanwhile, do not keep */
    int64_t expires_ms;
    cred c;
    char error[160]; /* ENTRY_ERROR */
} entry;

typedef struct shard {
    pthread_mutex_t mu;
    pthread_cond_t fetched; /* broadcast whenever a fetch in this shard ends */
    entry *buckets[BUCKETS];
    size_t n;
} shard;

struct cred_cache {
    shard shards[SHARDS];
    int64_t ttl_ms, negative_ttl_ms, wait_ms;
    cred_fetch_fn fetch;
    void *fetch_ctx;
    _Atomic uint64_t hits, negative_hits, misses, coalesced, fetch_errors;
    _Atomic uint64_t invalidated_key, invalidated_user, invalidated_all, dropped_entries;
};

/* FNV-1a over the key: access keys are random, any decent spread does. */
static uint32_t _hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

static shard *_shard_of(cred_cache *c, uint32_t h)
{
    return &c->shards[h % SHARDS];
}

static entry **_slot_of(shard *sh, uint32_t h, const char *ak)
{
    entry **pp = &sh->buckets[(h / SHARDS) % BUCKETS];
    while (*pp && strcmp((*pp)->access_key, ak) != 0)
        pp = &(*pp)->next;
    return pp;
}

cred_cache *cred_cache_new(int64_t ttl_ms, int64_t negative_ttl_ms, int64_t wait_ms,
                           cred_fetch_fn fetch, void *fetch_ctx)
{
    cred_cache *c = ts_calloc(1, sizeof(*c));
    c->ttl_ms = ttl_ms;
    c->negative_ttl_ms = negative_ttl_ms;
    c->wait_ms = wait_ms > 0 ? wait_ms : 1000;
    c->fetch = fetch;
    c->fetch_ctx = fetch_ctx;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    for (int i = 0; i < SHARDS; i++) {
        pthread_mutex_init(&c->shards[i].mu, NULL);
        pthread_cond_init(&c->shards[i].fetched, &ca);
    }
    pthread_condattr_destroy(&ca);
    return c;
}

void cred_cache_free(cred_cache *c)
{
    if (!c) return;
    for (int i = 0; i < SHARDS; i++) {
        shard *sh = &c->shards[i];
        for (int b = 0; b < BUCKETS; b++) {
            for (entry *e = sh->buckets[b], *next; e; e = next) {
                next = e->next;
                free(e);
            }
        }
        pthread_mutex_destroy(&sh->mu);
        pthread_cond_destroy(&sh->fetched);
    }
    free(c);
}

/* Remove entries for which pred holds (never one being fetched: that is
 * marked dropped instead, and its fetcher removes it). Shard locked. */
static size_t _sweep(shard *sh, bool (*pred)(const entry *, const void *), const void *arg)
{
    size_t removed = 0;
    for (int b = 0; b < BUCKETS; b++) {
        entry **pp = &sh->buckets[b];
        while (*pp) {
            entry *e = *pp;
            if (!pred(e, arg)) {
                pp = &e->next;
            } else if (e->state == ENTRY_FETCHING) {
                e->dropped = true;
                pp = &e->next;
            } else {
                *pp = e->next;
                free(e);
                sh->n--;
                removed++;
            }
        }
    }
    return removed;
}

/* Eviction candidates when a shard is full: never an entry being fetched. */
static bool _stale(const entry *e, const void *now)
{
    return e->state != ENTRY_FETCHING &&
           (e->state != ENTRY_FOUND || e->expires_ms <= *(const int64_t *)now);
}

static bool _settled(const entry *e, const void *arg)
{
    (void)arg;
    return e->state != ENTRY_FETCHING;
}

static bool _any(const entry *e, const void *arg)
{
    (void)e;
    (void)arg;
    return true;
}

static bool _of_user(const entry *e, const void *user_id)
{
    /* A fetch in flight has no user yet: drop it too, to be safe. */
    return e->state == ENTRY_FETCHING ||
           (e->state == ENTRY_FOUND && strcmp(e->c.user_id, user_id) == 0);
}

/* Make room for one more entry in a full shard (locked). */
static void _make_room(shard *sh, int64_t now)
{
    if (sh->n < SHARD_MAX_ENTRIES) return;
    _sweep(sh, _stale, &now);
    if (sh->n >= SHARD_MAX_ENTRIES) _sweep(sh, _settled, NULL);
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

cred_result cred_cache_get(cred_cache *c, const char *ak, cred *out, ts_err *err)
{
    uint32_t h = _hash(ak);
    shard *sh = _shard_of(c, h);
    int64_t deadline = -1;
    bool waited = false;

    pthread_mutex_lock(&sh->mu);
    entry *e;
    for (;;) {
        e = *_slot_of(sh, h, ak);
        if (!e || e->state != ENTRY_FETCHING) break;
        /* Another request is asking auth about this key: wait for its answer. */
        if (!waited) {
            waited = true;
            atomic_fetch_add(&c->coalesced, 1);
            deadline = ts_now_mono_ms() + c->wait_ms;
        }
        if (!_wait_fetch(sh, deadline)) {
            pthread_mutex_unlock(&sh->mu);
            ts_err_set(err, "timed out waiting for tessera-auth's answer about this access key");
            atomic_fetch_add(&c->fetch_errors, 1);
            return CRED_UNAVAILABLE;
        }
    }
    int64_t now = ts_now_mono_ms();
    if (e && e->state == ENTRY_ERROR && (waited || e->expires_ms > now)) {
        ts_err_set(err, "%s", e->error);
        pthread_mutex_unlock(&sh->mu);
        return CRED_UNAVAILABLE;
    }
    if (e && e->state != ENTRY_ERROR && e->expires_ms > now) {
        cred_result r = e->state == ENTRY_FOUND ? CRED_FOUND : CRED_UNKNOWN;
        if (r == CRED_FOUND) *out = e->c;
        pthread_mutex_unlock(&sh->mu);
        atomic_fetch_add(r == CRED_FOUND ? &c->hits : &c->negative_hits, 1);
        return r;
    }
    /* Miss (or expired): this request fetches; others wait on the entry. */
    atomic_fetch_add(&c->misses, 1);
    if (!e) {
        _make_room(sh, now);
        e = ts_calloc(1, sizeof(*e));
        ts_strlcpy(e->access_key, ak, sizeof(e->access_key));
        entry **slot = _slot_of(sh, h, ak);
        *slot = e;
        sh->n++;
    }
    e->state = ENTRY_FETCHING;
    e->dropped = false;
    pthread_mutex_unlock(&sh->mu);

    cred fetched;
    memset(&fetched, 0, sizeof(fetched));
    cred_result r = c->fetch(c->fetch_ctx, ak, &fetched, err);
    if (r == CRED_UNAVAILABLE) atomic_fetch_add(&c->fetch_errors, 1);

    pthread_mutex_lock(&sh->mu);
    /* The entry is still where it was: sweeps never free one being fetched. */
    entry **slot = _slot_of(sh, h, ak);
    ts_assert(*slot == e);
    int64_t ttl = r == CRED_FOUND ? c->ttl_ms : c->negative_ttl_ms;
    if (r == CRED_UNAVAILABLE) {
        e->state = ENTRY_ERROR;
        e->expires_ms = ts_now_mono_ms() + ERROR_TTL_MS;
        ts_strlcpy(e->error, err ? err->msg : "tessera-auth did not answer", sizeof(e->error));
    } else if (e->dropped || ttl <= 0) {
        *slot = e->next;
        free(e);
        sh->n--;
    } else {
        e->state = r == CRED_FOUND ? ENTRY_FOUND : ENTRY_UNKNOWN;
        e->expires_ms = ts_now_mono_ms() + ttl;
        if (r == CRED_FOUND) e->c = fetched;
    }
    pthread_cond_broadcast(&sh->fetched);
    pthread_mutex_unlock(&sh->mu);
    if (r == CRED_FOUND) *out = fetched;
    return r;
}

void cred_cache_drop_key(cred_cache *c, const char *ak)
{
    uint32_t h = _hash(ak);
    shard *sh = _shard_of(c, h);
    atomic_fetch_add(&c->invalidated_key, 1);
    pthread_mutex_lock(&sh->mu);
    entry **slot = _slot_of(sh, h, ak);
    entry *e = *slot;
    if (e && e->state == ENTRY_FETCHING) {
        e->dropped = true;
    } else if (e) {
        *slot = e->next;
        free(e);
        sh->n--;
        atomic_fetch_add(&c->dropped_entries, 1);
    }
    pthread_mutex_unlock(&sh->mu);
}

void cred_cache_drop_user(cred_cache *c, const char *user_id)
{
    /* No user -> keys index: a user has few keys, the cache holds the keys in
     * use, and user changes are rare; scanning every shard is cheap enough. */
    atomic_fetch_add(&c->invalidated_user, 1);
    for (int i = 0; i < SHARDS; i++) {
        shard *sh = &c->shards[i];
        pthread_mutex_lock(&sh->mu);
        size_t n = _sweep(sh, _of_user, user_id);
        pthread_mutex_unlock(&sh->mu);
        atomic_fetch_add(&c->dropped_entries, n);
    }
}

void cred_cache_drop_all(cred_cache *c)
{
    atomic_fetch_add(&c->invalidated_all, 1);
    for (int i = 0; i < SHARDS; i++) {
        shard *sh = &c->shards[i];
        pthread_mutex_lock(&sh->mu);
        size_t n = _sweep(sh, _any, NULL);
        pthread_mutex_unlock(&sh->mu);
        atomic_fetch_add(&c->dropped_entries, n);
    }
}

void cred_cache_get_stats(cred_cache *c, cred_cache_stats *out)
{
    out->hits = atomic_load(&c->hits);
    out->negative_hits = atomic_load(&c->negative_hits);
    out->misses = atomic_load(&c->misses);
    out->coalesced = atomic_load(&c->coalesced);
    out->fetch_errors = atomic_load(&c->fetch_errors);
    out->invalidated_key = atomic_load(&c->invalidated_key);
    out->invalidated_user = atomic_load(&c->invalidated_user);
    out->invalidated_all = atomic_load(&c->invalidated_all);
    out->dropped_entries = atomic_load(&c->dropped_entries);
    out->entries = 0;
    for (int i = 0; i < SHARDS; i++) {
        pthread_mutex_lock(&c->shards[i].mu);
        out->entries += c->shards[i].n;
        pthread_mutex_unlock(&c->shards[i].mu);
    }
}
