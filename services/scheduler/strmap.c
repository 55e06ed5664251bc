/* strmap.c: open addressing with linear probing and backward-shift deletion. */
#include "services/scheduler/strmap.h"

#include <stdlib.h>
#include <string.h>

typedef struct slot {
    char *key; /* NULL = empty */
    uint64_t hash;
    void *value;
} slot;

struct strmap {
    slot *s;
    size_t cap, len; /* cap is a power of two */
};

static uint64_t hash_str(const char *k)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * 1099511628211ull;
    return h ^ (h >> 29);
}

strmap *strmap_new(void)
{
    strmap *m = ts_calloc(1, sizeof(*m));
    m->cap = 16;
    m->s = ts_calloc(m->cap, sizeof(slot));
    return m;
}

void strmap_free(strmap *m, void (*free_value)(void *))
{
    if (!m) return;
    for (size_t i = 0; i < m->cap; i++)
        if (m->s[i].key) {
            free(m->s[i].key);
            if (free_value) free_value(m->s[i].value);
        }
    free(m->s);
    free(m);
}

static size_t find(const strmap *m, const char *key, uint64_t h)
{
    size_t mask = m->cap - 1, i = h & mask;
    while (m->s[i].key && (m->s[i].hash != h || strcmp(m->s[i].key, key) != 0))
        i = (i + 1) & mask;
    return i;
}

void *strmap_get(const strmap *m, const char *key)
{
    slot *s = &m->s[find(m, key, hash_str(key))];
    return s->key ? s->value : NULL;
}

static void grow(strmap *m)
{
    slot *old = m->s;
    size_t oldcap = m->cap;
    m->cap *= 2;
    m->s = ts_calloc(m->cap, sizeof(slot));
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].key) m->s[find(m, old[i].key, old[i].hash)] = old[i];
    free(old);
}

void *strmap_put(strmap *m, const char *key, void *value)
{
    if ((m->len + 1) * 4 > m->cap * 3) grow(m);
    uint64_t h = hash_str(key);
    slot *s = &m->s[find(m, key, h)];
    if (s->key) {
        void *prev = s->value;
        s->value = value;
        return prev;
    }
    s->key = ts_strdup(key);
    s->hash = h;
    s->value = value;
    m->len++;
    return NULL;
}

void *strmap_del(strmap *m, const char *key)
{
    size_t mask = m->cap - 1, i = find(m, key, hash_str(key));
    if (!m->s[i].key) return NULL;
    void *value = m->s[i].value;
    free(m->s[i].key);
    m->s[i].key = NULL;
    m->len--;
    /* backward shift: move later entries of the probe run into the hole */
    for (size_t j = (i + 1) & mask; m->s[j].key; j = (j + 1) & mask) {
        size_t home = m->s[j].hash & mask;
        bool movable = i <= j ? (home <= i || home > j) : (home <= i && home > j);
        if (movable) {
            m->s[i] = m->s[j];
            m->s[j].key = NULL;
            i = j;
        }
    }
    return value;
}

size_t strmap_len(const strmap *m)
{
    return m->len;
}

bool strmap_next(const strmap *m, size_t *pos, const char **key, void **value)
{
    for (; *pos < m->cap; (*pos)++)
        if (m->s[*pos].key) {
            if (key) *key = m->s[*pos].key;
            if (value) *value = m->s[*pos].value;
            (*pos)++;
            return true;
        }
    return false;
}
