/* context_cache.c: see context_cache.h. A chained hash table for lookups and
 * a doubly linked list in order of use for eviction, both under one mutex. */
#include "context_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    struct entry *next;              /* hash chain */
    struct entry *newer, *older;     /* use order */
    char key[CTX_CACHE_KEY_MAX + 1]; /* access key */
    char *group;                     /* NULL: no group */
    char *user_id;                   /* the context's user.id ("" when none) */
    json_t *ctx;                     /* owned, never handed out */
    int64_t expires_ms;
    uint32_t hash;
} entry;

struct ctx_cache {
    pthread_mutex_t mu;
    entry **buckets;
    size_t nbuckets; /* a power of two */
    size_t n, max_entries;
    entry *newest, *oldest;
    int64_t ttl_ms;
    uint64_t gen; /* advanced by every drop */
    uint64_t hits, misses, expired, stored, stale_puts, evicted, dropped;
};

/* FNV-1a over access key, a separator and the group (or a marker for none). */
static uint32_t _hash(const char *ak, const char *group)
{
    uint32_t h = 2166136261u;
    for (const char *p = ak; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 16777619u;
    }
    h ^= group ? 0x1f : 0x1e;
    h *= 16777619u;
    for (const char *p = group ? group : ""; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 16777619u;
    }
    return h;
}

static bool _cacheable(const char *ak, const char *group)
{
    return ak && *ak && strlen(ak) <= CTX_CACHE_KEY_MAX &&
           (!group || strlen(group) <= CTX_CACHE_GROUP_MAX);
}

static bool _same(const entry *e, uint32_t h, const char *ak, const char *group)
{
    if (e->hash != h || strcmp(e->key, ak) != 0) return false;
    if (!e->group || !group) return !e->group && !group;
    return strcmp(e->group, group) == 0;
}

ctx_cache *ctx_cache_new(size_t max_entries, int64_t ttl_ms)
{
    ctx_cache *c = ts_calloc(1, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
    c->max_entries = max_entries ? max_entries : 1;
    c->ttl_ms = ttl_ms;
    c->nbuckets = 16;
    while (c->nbuckets < c->max_entries)
        c->nbuckets *= 2;
    c->buckets = ts_calloc(c->nbuckets, sizeof(*c->buckets));
    return c;
}

static void _entry_free(entry *e)
{
    json_decref(e->ctx);
    free(e->group);
    free(e->user_id);
    free(e);
}

/* Unlink e from its chain and the use order, free it (locked). */
static void _remove(ctx_cache *c, entry *e)
{
    entry **pp = &c->buckets[e->hash & (c->nbuckets - 1)];
    while (*pp != e)
        pp = &(*pp)->next;
    *pp = e->next;
    if (e->newer)
        e->newer->older = e->older;
    else
        c->newest = e->older;
    if (e->older)
        e->older->newer = e->newer;
    else
        c->oldest = e->newer;
    c->n--;
    _entry_free(e);
}

/* Move e to the front of the use order (locked). */
static void _touch(ctx_cache *c, entry *e)
{
    if (c->newest == e) return;
    e->newer->older = e->older; /* e is not the newest, so it has a newer one */
    if (e->older)
        e->older->newer = e->newer;
    else
        c->oldest = e->newer;
    e->newer = NULL;
    e->older = c->newest;
    c->newest->newer = e;
    c->newest = e;
}

static entry *_find(ctx_cache *c, uint32_t h, const char *ak, const char *group)
{
    for (entry *e = c->buckets[h & (c->nbuckets - 1)]; e; e = e->next)
        if (_same(e, h, ak, group)) return e;
    return NULL;
}

void ctx_cache_free(ctx_cache *c)
{
    if (!c) return;
    while (c->oldest)
        _remove(c, c->oldest);
    free(c->buckets);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

json_t *ctx_cache_get(ctx_cache *c, const char *ak, const char *group, int64_t now_ms,
                      uint64_t *gen)
{
    json_t *out = NULL;
    uint32_t h = _cacheable(ak, group) ? _hash(ak, group) : 0;
    pthread_mutex_lock(&c->mu);
    *gen = c->gen;
    entry *e = _cacheable(ak, group) ? _find(c, h, ak, group) : NULL;
    if (e && e->expires_ms <= now_ms) {
        _remove(c, e);
        c->expired++;
        e = NULL;
    }
    if (e) {
        _touch(c, e);
        out = json_deep_copy(e->ctx);
        c->hits++;
    } else {
        c->misses++;
    }
    pthread_mutex_unlock(&c->mu);
    return out;
}

void ctx_cache_put(ctx_cache *c, const char *ak, const char *group, json_t *ctx, uint64_t gen,
                   int64_t now_ms)
{
    if (!_cacheable(ak, group) || !json_is_object(ctx)) return;
    /* The copy is made outside the lock: ctx is the caller's. */
    json_t *copy = json_deep_copy(ctx);
    const char *uid = json_string_value(json_object_get(json_object_get(ctx, "user"), "id"));
    uint32_t h = _hash(ak, group);
    pthread_mutex_lock(&c->mu);
    if (gen != c->gen) {
        c->stale_puts++;
        pthread_mutex_unlock(&c->mu);
        json_decref(copy);
        return;
    }
    entry *e = _find(c, h, ak, group);
    if (e) {
        json_decref(e->ctx);
        free(e->user_id);
        _touch(c, e);
    } else {
        if (c->n >= c->max_entries) {
            _remove(c, c->oldest);
            c->evicted++;
        }
        e = ts_calloc(1, sizeof(*e));
        ts_strlcpy(e->key, ak, sizeof(e->key));
        e->group = group ? ts_strdup(group) : NULL;
        e->hash = h;
        entry **head = &c->buckets[h & (c->nbuckets - 1)];
        e->next = *head;
        *head = e;
        e->older = c->newest;
        if (c->newest) c->newest->newer = e;
        c->newest = e;
        if (!c->oldest) c->oldest = e;
        c->n++;
    }
    e->ctx = copy;
    e->user_id = ts_strdup(uid ? uid : "");
    e->expires_ms = now_ms + c->ttl_ms;
    c->stored++;
    pthread_mutex_unlock(&c->mu);
}

/* Drop the entries for which pred holds; every drop advances the generation,
 * even one that finds nothing (a fetch in flight may be about to put it). */
static void _drop(ctx_cache *c, bool (*pred)(const entry *, const char *), const char *arg)
{
    pthread_mutex_lock(&c->mu);
    c->gen++;
    for (entry *e = c->oldest, *next; e; e = next) {
        next = e->newer;
        if (pred(e, arg)) {
            _remove(c, e);
            c->dropped++;
        }
    }
    pthread_mutex_unlock(&c->mu);
}

static bool _of_key(const entry *e, const char *ak)
{
    return strcmp(e->key, ak) == 0;
}

static bool _of_user(const entry *e, const char *user_id)
{
    return strcmp(e->user_id, user_id) == 0;
}

static bool _any(const entry *e, const char *arg)
{
    (void)e;
    (void)arg;
    return true;
}

void ctx_cache_drop_key(ctx_cache *c, const char *ak)
{
    _drop(c, _of_key, ak);
}

void ctx_cache_drop_user(ctx_cache *c, const char *user_id)
{
    _drop(c, _of_user, user_id);
}

void ctx_cache_drop_all(ctx_cache *c)
{
    _drop(c, _any, NULL);
}

void ctx_cache_get_stats(ctx_cache *c, ctx_cache_stats *out)
{
    pthread_mutex_lock(&c->mu);
    out->hits = c->hits;
    out->misses = c->misses;
    out->expired = c->expired;
    out->stored = c->stored;
    out->stale_puts = c->stale_puts;
    out->evicted = c->evicted;
    out->dropped = c->dropped;
    out->entries = c->n;
    pthread_mutex_unlock(&c->mu);
}
