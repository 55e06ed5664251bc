/* largest_agent.c: see largest_agent.h. */
#include "largest_agent.h"

#include "context.h"
#include "libcommon/pgjson.h"

#include <jansson.h>
#include <pthread.h>
#include <string.h>

#define CACHED_GROUPS 32

typedef struct entry {
    char group[64]; /* "" free */
    slots_t max;
    int agents;
    int64_t at_ms;
} entry;

static entry cache[CACHED_GROUPS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static bool cached(const char *group, slots_t *max, int *agents)
{
    if (reg_settings.largest_agent_cache_ms <= 0) return false;
    int64_t now = ts_now_mono_ms();
    bool hit = false;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < CACHED_GROUPS && !hit; i++) {
        if (strcmp(cache[i].group, group) != 0) continue;
        if (now - cache[i].at_ms < reg_settings.largest_agent_cache_ms) {
            *max = cache[i].max;
            *agents = cache[i].agents;
            hit = true;
        }
    }
    pthread_mutex_unlock(&mu);
    return hit;
}

/* Keep the answer, in the group's slot or the oldest one. */
static void keep(const char *group, const slots_t *max, int agents, int64_t at_ms)
{
    if (reg_settings.largest_agent_cache_ms <= 0 || strlen(group) >= sizeof(cache[0].group)) return;
    pthread_mutex_lock(&mu);
    int slot = 0;
    for (int i = 0; i < CACHED_GROUPS; i++) {
        if (strcmp(cache[i].group, group) == 0) {
            slot = i;
            break;
        }
        if (cache[i].at_ms < cache[slot].at_ms) slot = i;
    }
    /* An answer read before the one kept does not replace it. */
    if (strcmp(cache[slot].group, group) != 0 || cache[slot].at_ms <= at_ms) {
        ts_strlcpy(cache[slot].group, group, sizeof(cache[slot].group));
        cache[slot].max = *max;
        cache[slot].agents = agents;
        cache[slot].at_ms = at_ms;
    }
    pthread_mutex_unlock(&mu);
}

bool largest_agent(PGconn *conn, http_resp *resp, const char *group, bool fresh, slots_t *max,
                   int *agents)
{
    slots_clear(max);
    *agents = 0;
    if (!fresh && cached(group, max, agents)) return true;
    int64_t at = ts_now_mono_ms();
    const char *p[] = {group};
    PGresult *r = pgjson_query(conn, resp, "read agents",
                               "SELECT slots::text FROM registry.agents"
                               " WHERE resource_group = $1 AND status = 'ALIVE'",
                               1, p);
    if (!r) return false;
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *sj = json_loads(PQgetvalue(r, i, 0), 0, NULL);
        slots_t s;
        ts_err e;
        if (slots_from_json(&s, sj, &e))
            for (int id = 0; id < SLOTS_MAX; id++)
                if ((s.mask >> id) & 1u && (!((max->mask >> id) & 1u) || s.v[id] > max->v[id]))
                    slots_put(max, id, s.v[id]);
        json_decref(sj);
    }
    *agents = PQntuples(r);
    PQclear(r);
    keep(group, max, *agents, at);
    return true;
}
