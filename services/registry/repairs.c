/* repairs.c: see repairs.h. */
#include "repairs.h"

#include "libcommon/log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[RK_COUNT] = {
    "kernel_lost",     "kernel_exited",        "kernel_started",   "create_resent",
    "destroy_resent",  "termination_finished", "orphan_destroyed", "session_running",
    "session_ended",   "reservation_stale",    "reservation_lost", "occupancy_drift",
    "routes_restored",
};

static _Atomic unsigned long repairs[RK_COUNT];

static const char *id_or_dash(const char *id)
{
    return id && *id ? id : "-";
}

void repairs_record(repair_kind kind, const char *session_id, const char *kernel_id,
                    const char *agent_id, const char *why)
{
    if ((unsigned)kind >= RK_COUNT) return;
    atomic_fetch_add(&repairs[kind], 1);
    char q[600];
    TLOG_WARN("reconcile repair", "kind=%s session=%s kernel=%s agent=%s why=%s", kind_names[kind],
              id_or_dash(session_id), id_or_dash(kernel_id), id_or_dash(agent_id),
              tlog_quote(q, sizeof(q), why ? why : ""));
}

const char *repairs_kind_name(repair_kind kind)
{
    return (unsigned)kind < RK_COUNT ? kind_names[kind] : "unknown";
}

unsigned long repairs_count(repair_kind kind)
{
    return (unsigned)kind < RK_COUNT ? atomic_load(&repairs[kind]) : 0;
}

/* ---- confirmation across passes ------------------------------------------------------------ */

typedef struct strset {
    char **v;
    size_t n, cap;
} strset;

static pthread_mutex_t g_sus_mu = PTHREAD_MUTEX_INITIALIZER;
static strset g_prev, g_cur;

static bool strset_has(const strset *s, const char *k)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], k) == 0) return true;
    return false;
}

static void strset_clear(strset *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof(*s));
}

bool repairs_suspect(const char *key)
{
    pthread_mutex_lock(&g_sus_mu);
    if (!strset_has(&g_cur, key)) {
        if (g_cur.n == g_cur.cap) {
            g_cur.cap = g_cur.cap ? g_cur.cap * 2 : 16;
            g_cur.v = ts_realloc(g_cur.v, g_cur.cap * sizeof(*g_cur.v));
        }
        g_cur.v[g_cur.n++] = ts_strdup(key);
    }
    bool seen = strset_has(&g_prev, key);
    pthread_mutex_unlock(&g_sus_mu);
    return seen;
}

void repairs_rotate(void)
{
    pthread_mutex_lock(&g_sus_mu);
    strset_clear(&g_prev);
    g_prev = g_cur;
    memset(&g_cur, 0, sizeof(g_cur));
    pthread_mutex_unlock(&g_sus_mu);
}
