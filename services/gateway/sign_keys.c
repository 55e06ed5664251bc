/* sign_keys.c: see sign_keys.h. */
#include "sign_keys.h"

#include <stdatomic.h>
#include <string.h>

#define SLOTS 64    /* per thread; a slot is about 400 bytes */
#define HOST_MAX 96 /* longer Host headers are derived every time */

typedef struct slot {
    char access_key[SIGN_ACCESS_KEY_LEN + 1];
    char secret_key[SIGN_SECRET_KEY_LEN + 1];
    char host[HOST_MAX + 1];
    int day; /* 0: empty */
    sign_key key;
} slot;

static _Thread_local slot table[SLOTS];
static atomic_uint_fast64_t hits, misses;

static uint32_t slot_of(const char *access_key, int day, const char *host)
{
    uint32_t h = 2166136261u ^ (uint32_t)day; /* FNV-1a */
    for (const char *p = access_key; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    for (const char *p = host; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    return h % SLOTS;
}

const sign_key *sign_keys_get(const char *access_key, const char *secret_key, time_t date,
                              const char *host, sign_key *scratch)
{
    int day = sign_day(date);
    size_t host_len = strlen(host);
    if (host_len > HOST_MAX || strlen(access_key) > SIGN_ACCESS_KEY_LEN ||
        strlen(secret_key) > SIGN_SECRET_KEY_LEN) {
        atomic_fetch_add_explicit(&misses, 1, memory_order_relaxed);
        sign_key_derive(secret_key, date, host, scratch);
        return scratch;
    }
    slot *s = &table[slot_of(access_key, day, host)];
    if (s->day == day && strcmp(s->access_key, access_key) == 0 && strcmp(s->host, host) == 0 &&
        strcmp(s->secret_key, secret_key) == 0) {
        atomic_fetch_add_explicit(&hits, 1, memory_order_relaxed);
        return &s->key;
    }
    atomic_fetch_add_explicit(&misses, 1, memory_order_relaxed);
    sign_key_derive(secret_key, date, host, &s->key);
    strcpy(s->access_key, access_key);
    strcpy(s->secret_key, secret_key);
    memcpy(s->host, host, host_len + 1);
    s->day = day;
    return &s->key;
}

void sign_keys_stats_get(sign_keys_stats *out)
{
    out->hits = atomic_load(&hits);
    out->misses = atomic_load(&misses);
}
