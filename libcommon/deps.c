/* deps.c: see deps.h. */
#include "libcommon/deps.h"

#include "libcommon/log.h"
#include "libcommon/metrics.h"

#include <stdatomic.h>

static const char *const g_names[DEP_COUNT] = {"postgresql", "redis", "kafka"};

static struct {
    _Atomic int64_t down_since_ms; /* monotonic; 0 = up */
    _Atomic uint64_t outages;
} g_dep[DEP_COUNT];

const char *deps_name(deps_id dep)
{
    return dep < DEP_COUNT ? g_names[dep] : "?";
}

void deps_mark_down(deps_id dep, const char *why)
{
    if (dep >= DEP_COUNT || atomic_load(&g_dep[dep].down_since_ms) != 0) return;
    int64_t expected = 0, now = ts_now_mono_ms();
    if (!atomic_compare_exchange_strong(&g_dep[dep].down_since_ms, &expected, now ? now : 1))
        return;
    atomic_fetch_add(&g_dep[dep].outages, 1);
    char q[600];
    TLOG_WARN("dependency unavailable", "dependency=%s error=%s", g_names[dep],
              tlog_quote(q, sizeof(q), why ? why : ""));
}

void deps_mark_up(deps_id dep)
{
    if (dep >= DEP_COUNT || atomic_load(&g_dep[dep].down_since_ms) == 0) return;
    int64_t since = atomic_exchange(&g_dep[dep].down_since_ms, 0);
    if (since)
        TLOG_INFO("dependency available again", "dependency=%s down_ms=%lld", g_names[dep],
                  (long long)(ts_now_mono_ms() - since));
}

bool deps_is_down(deps_id dep)
{
    return dep < DEP_COUNT && atomic_load(&g_dep[dep].down_since_ms) != 0;
}

const char *deps_down(void)
{
    for (int i = 0; i < DEP_COUNT; i++)
        if (atomic_load(&g_dep[i].down_since_ms) != 0) return g_names[i];
    return NULL;
}

void deps_collect(FILE *out, void *ctx)
{
    unsigned mask = ctx ? *(const unsigned *)ctx : ~0u;
    metrics_family(out, "tessera_dependency_up", "gauge",
                   "1 when the dependency answered the last time it was used, else 0");
    for (int i = 0; i < DEP_COUNT; i++)
        if (mask & (1u << i))
            fprintf(out, "tessera_dependency_up{dependency=\"%s\"} %d\n", g_names[i],
                    atomic_load(&g_dep[i].down_since_ms) == 0);
    metrics_family(out, "tessera_dependency_outages_total", "counter",
                   "times the dependency was seen going down");
    for (int i = 0; i < DEP_COUNT; i++)
        if (mask & (1u << i))
            fprintf(out, "tessera_dependency_outages_total{dependency=\"%s\"} %llu\n", g_names[i],
                    (unsigned long long)atomic_load(&g_dep[i].outages));
}
