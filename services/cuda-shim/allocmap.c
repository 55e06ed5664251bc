/* allocmap.c: this process's live allocations (see allocmap.h). */
#include "services/cuda-shim/allocmap.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t _mu = PTHREAD_MUTEX_INITIALIZER;
static tshim_alloc *_tab; /* key 0 + kind 0 = empty */
static uint64_t _cap;     /* power of two */
static uint64_t _count;
static bool _fork_hooked;

static inline uint64_t _hash(uint8_t kind, uint64_t key)
{
    uint64_t h = (key ^ ((uint64_t)kind << 56)) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

static void _after_fork_child(void)
{
    /* The mutex may have been held by another parent thread: start over. */
    pthread_mutex_init(&_mu, NULL);
    free(_tab);
    _tab = NULL;
    _cap = _count = 0;
}

static bool _grow(void)
{
    uint64_t ncap = _cap ? _cap * 2 : 1024;
    tshim_alloc *n = calloc(ncap, sizeof(*n));
    if (!n) return false;
    for (uint64_t i = 0; i < _cap; i++) {
        if (!_tab[i].kind) continue;
        uint64_t j = _hash(_tab[i].kind, _tab[i].key) & (ncap - 1);
        while (n[j].kind)
            j = (j + 1) & (ncap - 1);
        n[j] = _tab[i];
    }
    free(_tab);
    _tab = n;
    _cap = ncap;
    return true;
}

bool tshim_map_put(const tshim_alloc *a)
{
    pthread_mutex_lock(&_mu);
    if (!_fork_hooked) {
        pthread_atfork(NULL, NULL, _after_fork_child);
        _fork_hooked = true;
    }
    bool ok = true;
    if ((_count + 1) * 2 > _cap) ok = _grow();
    if (ok) {
        uint64_t j = _hash(a->kind, a->key) & (_cap - 1);
        while (_tab[j].kind && !(_tab[j].kind == a->kind && _tab[j].key == a->key))
            j = (j + 1) & (_cap - 1);
        if (!_tab[j].kind) _count++;
        _tab[j] = *a;
    }
    pthread_mutex_unlock(&_mu);
    return ok;
}

bool tshim_map_take(uint8_t kind, uint64_t key, tshim_alloc *out)
{
    bool found = false;
    pthread_mutex_lock(&_mu);
    if (_cap) {
        uint64_t m = _cap - 1, j = _hash(kind, key) & m;
        while (_tab[j].kind) {
            if (_tab[j].kind == kind && _tab[j].key == key) {
                found = true;
                break;
            }
            j = (j + 1) & m;
        }
        if (found) {
            *out = _tab[j];
            /* Backward-shift deletion: pull later members of the cluster into the
             * hole when their home slot is at or before it. */
            uint64_t hole = j, k = j;
            for (;;) {
                k = (k + 1) & m;
                if (!_tab[k].kind) break;
                uint64_t home = _hash(_tab[k].kind, _tab[k].key) & m;
                if (((k - home) & m) >= ((k - hole) & m)) {
                    _tab[hole] = _tab[k];
                    hole = k;
                }
            }
            memset(&_tab[hole], 0, sizeof(_tab[hole]));
            _count--;
        }
    }
    pthread_mutex_unlock(&_mu);
    return found;
}

uint64_t tshim_map_count(void)
{
    pthread_mutex_lock(&_mu);
    uint64_t n = _count;
    pthread_mutex_unlock(&_mu);
    return n;
}

void tshim_map_reset(void)
{
    pthread_mutex_lock(&_mu);
    free(_tab);
    _tab = NULL;
    _cap = _count = 0;
    pthread_mutex_unlock(&_mu);
}
