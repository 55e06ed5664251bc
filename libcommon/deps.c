/* deps.c: see deps.h. */
#include "libcommon/deps.h"

#include "libcommon/log.h"
#include "libcommon/metrics.h"

#include <pthread.h>
#include <stdatomic.h>

static const char *const g_names[DEP_COUNT] = {"postgresql", "redis", "kafka"};

static struct {
    _Atomic int streak;            /* consecutive failures; 0: the last contact answered */
    _Atomic int64_t first_fail_ms; /* monotonic, the streak's first failure */
    _Atomic int64_t down_since_ms; /* monotonic; 0 = not down */
    _Atomic uint64_t outages, failures;
} g_dep[DEP_COUNT];

/* Changes of state (rare) take the lock; reads do not. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int g_failures = DEPS_DEFAULT_FAILURES;
static _Atomic int g_window_ms = DEPS_DEFAULT_WINDOW_MS;

void deps_set_policy(const deps_policy *policy)
{
    if (!policy) return;
    atomic_store(&g_failures, policy->failures < 1 ? 1 : policy->failures);
    atomic_store(&g_window_ms, policy->window_ms < 0 ? 0 : policy->window_ms);
}

void deps_get_policy(deps_policy *out)
{
    out->failures = atomic_load(&g_failures);
    out->window_ms = atomic_load(&g_window_ms);
}

const char *deps_name(deps_id dep)
{
    return dep < DEP_COUNT ? g_names[dep] : "?";
}

void deps_failed(deps_id dep, const char *why)
{
    if (dep >= DEP_COUNT) return;
    atomic_fetch_add(&g_dep[dep].failures, 1);
    int64_t now = ts_now_mono_ms();
    char q[600];
    pthread_mutex_lock(&g_mu);
    int streak = atomic_fetch_add(&g_dep[dep].streak, 1) + 1;
    if (streak == 1) {
        atomic_store(&g_dep[dep].first_fail_ms, now);
        TLOG_INFO("dependency did not answer", "dependency=%s error=%s", g_names[dep],
                  tlog_quote(q, sizeof(q), why ? why : ""));
    }
    int64_t failing_ms = now - atomic_load(&g_dep[dep].first_fail_ms);
    if (atomic_load(&g_dep[dep].down_since_ms) == 0 && streak >= atomic_load(&g_failures) &&
        failing_ms >= atomic_load(&g_window_ms)) {
        atomic_store(&g_dep[dep].down_since_ms, now ? now : 1);
        atomic_fetch_add(&g_dep[dep].outages, 1);
        TLOG_WARN("dependency unavailable", "dependency=%s failures=%d failing_ms=%lld error=%s",
                  g_names[dep], streak, (long long)failing_ms,
                  tlog_quote(q, sizeof(q), why ? why : ""));
    }
    pthread_mutex_unlock(&g_mu);
}

void deps_answered(deps_id dep)
{
    if (dep >= DEP_COUNT || atomic_load(&g_dep[dep].streak) == 0) return;
    pthread_mutex_lock(&g_mu);
    int streak = atomic_exchange(&g_dep[dep].streak, 0);
    int64_t since = atomic_exchange(&g_dep[dep].down_since_ms, 0);
    int64_t now = ts_now_mono_ms();
    if (since)
        TLOG_INFO("dependency available again", "dependency=%s down_ms=%lld", g_names[dep],
                  (long long)(now - since));
    else if (streak > 0)
        TLOG_INFO("dependency answers again", "dependency=%s failures=%d failing_ms=%lld",
                  g_names[dep], streak, (long long)(now - atomic_load(&g_dep[dep].first_fail_ms)));
    pthread_mutex_unlock(&g_mu);
}

bool deps_is_down(deps_id dep)
{
    return dep < DEP_COUNT && atomic_load(&g_dep[dep].down_since_ms) != 0;
}

bool deps_is_failing(deps_id dep)
{
    return dep < DEP_COUNT && atomic_load(&g_dep[dep].streak) != 0;
}

const char *deps_down(void)
{
    for (int i = 0; i < DEP_COUNT; i++)
        if (atomic_load(&g_dep[i].down_since_ms) != 0) return g_names[i];
    return NULL;
}

const char *deps_failing(void)
{
    const char *down = deps_down();
    if (down) return down;
    for (int i = 0; i < DEP_COUNT; i++)
        if (atomic_load(&g_dep[i].streak) != 0) return g_names[i];
    return NULL;
}

void deps_reset(void)
{
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < DEP_COUNT; i++) {
        atomic_store(&g_dep[i].streak, 0);
        atomic_store(&g_dep[i].down_since_ms, 0);
        atomic_store(&g_dep[i].outages, 0);
        atomic_store(&g_dep[i].failures, 0);
    }
    pthread_mutex_unlock(&g_mu);
}

/* The values of deps_collect's families, by dependency. */
static unsigned long long dep_up(int i)
{
    return atomic_load(&g_dep[i].down_since_ms) == 0;
}

static unsigned long long dep_outages(int i)
{
    return (unsigned long long)atomic_load(&g_dep[i].outages);
}

static unsigned long long dep_failures(int i)
{
    return (unsigned long long)atomic_load(&g_dep[i].failures);
}

void deps_collect(FILE *out, void *ctx)
{
    static const struct {
        const char *name, *type, *help;
        unsigned long long (*value)(int dep);
    } families[] = {
        {.name = "tessera_dependency_up",
         .type = "gauge",
         .help = "0 while the dependency is judged down (deps.down_after_failures failures in a "
                 "row over deps.down_after without an answer), else 1",
         .value = dep_up},
        {.name = "tessera_dependency_outages_total",
         .type = "counter",
         .help = "times the dependency was judged down",
         .value = dep_outages},
        {.name = "tessera_dependency_failures_total",
         .type = "counter",
         .help = "connection-level failures (refused, reset, timed out) talking to the "
                 "dependency, outage or not",
         .value = dep_failures},
    };
    unsigned mask = ctx ? *(const unsigned *)ctx : ~0u;
    for (size_t f = 0; f < TS_ARRAY_LEN(families); f++) {
        metrics_family(out, families[f].name, families[f].type, families[f].help);
        for (int i = 0; i < DEP_COUNT; i++)
            if (mask & (1u << i))
                fprintf(out, "%s{dependency=\"%s\"} %llu\n", families[f].name, g_names[i],
                        families[f].value(i));
    }
}
