/* usage.c: per-kernel usage on tessera.usage.v1 (usage.h). */
#include "services/agent/usage.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "libcommon/log.h"
#include "tessera/v1/usage.pb-c.h"

typedef struct usage_prev {
    char kernel_id[80];
    int64_t at_ms;
    int64_t cpu_usec;
    bool seen; /* in the current round */
} usage_prev;

struct usage_tracker {
    pthread_mutex_t mu;
    usage_prev *prev;
    int n, cap;
};

usage_tracker *usage_new(void)
{
    usage_tracker *u = ts_calloc(1, sizeof(*u));
    pthread_mutex_init(&u->mu, NULL);
    return u;
}

void usage_free(usage_tracker *u)
{
    if (!u) return;
    pthread_mutex_destroy(&u->mu);
    free(u->prev);
    free(u);
}

static usage_prev *_prev(usage_tracker *u, const char *id)
{
    for (int i = 0; i < u->n; i++)
        if (strcmp(u->prev[i].kernel_id, id) == 0) return &u->prev[i];
    if (u->n == u->cap) {
        u->cap = u->cap ? u->cap * 2 : 16;
        u->prev = ts_realloc(u->prev, sizeof(*u->prev) * (size_t)u->cap);
    }
    usage_prev *p = &u->prev[u->n++];
    memset(p, 0, sizeof(*p));
    ts_strlcpy(p->kernel_id, id, sizeof(p->kernel_id));
    return p;
}

int usage_publish(usage_tracker *u, runtime *rt, kbus *bus, const char *agent_id,
                  const kernel_view *views, int n)
{
    int published = 0;
    pthread_mutex_lock(&u->mu);
    for (int i = 0; i < u->n; i++)
        u->prev[i].seen = false;
    for (int i = 0; i < n; i++) {
        const kernel_view *v = &views[i];
        if (strcmp(v->status, "running") != 0) continue;
        kernel_usage ku;
        ts_err err = {{0}};
        if (!runtime_usage(rt, v->kernel_id, &ku, &err)) {
            TLOG_DEBUG("kernel usage unreadable", "kernel=%s error=\"%s\"", v->kernel_id, err.msg);
            continue;
        }
        int64_t now = ts_now_wall_ms();
        usage_prev *p = _prev(u, v->kernel_id);
        bool first = p->at_ms == 0;
        int64_t start = first ? now : p->at_ms;
        int64_t cpu_delta = first ? 0 : ku.cpu_usec - p->cpu_usec;
        if (cpu_delta < 0) cpu_delta = 0;
        p->at_ms = now;
        p->cpu_usec = ku.cpu_usec;
        p->seen = true;
        if (first) continue; /* a baseline: nothing to report over an empty interval */

        Tessera__V1__KernelUsage m = TESSERA__V1__KERNEL_USAGE__INIT;
        m.kernel_id = (char *)v->kernel_id;
        m.session_id = (char *)v->session_id;
        m.agent_id = (char *)agent_id;
        m.access_key = (char *)v->access_key;
        m.interval_start_ms = start;
        m.interval_end_ms = now;
        m.cpu_used_ms = cpu_delta / 1000;
        m.cpu_cores = now > start ? (double)cpu_delta / 1000.0 / (double)(now - start) : 0;
        m.mem_bytes = ku.mem_bytes;
        m.mem_peak_bytes = ku.mem_peak_bytes;
        if (kbus_publish(bus, USAGE_TOPIC, v->kernel_id, &m.base, NULL, v->kernel_id, &err))
            published++;
        else
            TLOG_WARN("usage not published", "kernel=%s error=\"%s\"", v->kernel_id, err.msg);
    }
    /* forget kernels that are gone */
    int w = 0;
    for (int i = 0; i < u->n; i++)
        if (u->prev[i].seen) u->prev[w++] = u->prev[i];
    u->n = w;
    pthread_mutex_unlock(&u->mu);
    return published;
}
