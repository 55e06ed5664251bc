/* auth_client.c: see auth_client.h. */
#include "auth_client.h"

#include "auth_events.h"
#include "context_cache.h"
#include "libcommon/httpc.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static __thread httpc *t_client;
static ctx_cache *g_cache; /* NULL: caching off */

static void _collect(FILE *out, void *ctx)
{
    (void)ctx;
    ctx_cache_stats st = {0};
    if (g_cache) ctx_cache_get_stats(g_cache, &st);
    static const struct {
        const char *name, *help;
        size_t off;
    } counters[] = {
        {"tessera_registry_context_cache_hits_total",
         "Session contexts answered from the cache (no call to tessera-auth).",
         offsetof(ctx_cache_stats, hits)},
        {"tessera_registry_context_cache_misses_total",
         "Session contexts not in the cache (or expired): asked of tessera-auth.",
         offsetof(ctx_cache_stats, misses)},
        {"tessera_registry_context_cache_expired_total",
         "Cache entries found past registry.context_cache_ttl (counted as misses too).",
         offsetof(ctx_cache_stats, expired)},
        {"tessera_registry_context_cache_evictions_total",
         "Least recently used entries evicted to stay within registry.context_cache_entries.",
         offsetof(ctx_cache_stats, evicted)},
        {"tessera_registry_context_cache_dropped_total",
         "Entries dropped by tessera.auth.v1 events.", offsetof(ctx_cache_stats, dropped)},
        {"tessera_registry_context_cache_stale_puts_total",
         "Contexts fetched while an invalidation happened, not kept.",
         offsetof(ctx_cache_stats, stale_puts)},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(counters); i++) {
        metrics_family(out, counters[i].name, "counter", counters[i].help);
        metrics_sample_u64(out, counters[i].name, NULL,
                           *(const uint64_t *)((const char *)&st + counters[i].off));
    }
    metrics_family(out, "tessera_registry_context_cache_entries", "gauge",
                   "Session contexts in the cache now.");
    metrics_sample_u64(out, "tessera_registry_context_cache_entries", NULL, st.entries);
    metrics_family(out, "tessera_registry_auth_events_total", "counter",
                   "tessera.auth.v1 events applied to the context cache.");
    metrics_sample_u64(out, "tessera_registry_auth_events_total", NULL, auth_events_count());
}

bool authc_start(svc *s, ts_err *err)
{
    metrics_add(svc_metrics(s), _collect, NULL);
    if (reg_settings.context_cache_ttl_ms <= 0) return true;
    ctx_cache *c = ctx_cache_new((size_t)reg_settings.context_cache_entries,
                                 reg_settings.context_cache_ttl_ms);
    if (!auth_events_start(s, c, err)) {
        ctx_cache_free(c);
        return false;
    }
    g_cache = c;
    return true;
}

void authc_stop(void)
{
    if (!g_cache) return;
    auth_events_stop();
    /* HTTP workers may still be in a call: the cache stays allocated until exit. */
}

static bool _fetch(const char *access_key, const char *group, const char *request_id, long *status,
                   json_t **out, ts_err *err)
{
    if (!t_client) t_client = httpc_new_internal((int)reg_settings.auth_timeout_ms);
    char *ak = curl_easy_escape(NULL, access_key, 0);
    char *g = group ? curl_easy_escape(NULL, group, 0) : NULL;
    char *url = ts_asprintf("%s/v1/session-context?access_key=%s%s%s", reg_settings.auth_url, ak,
                            g ? "&group=" : "", g ? g : "");
    curl_free(ak);
    if (g) curl_free(g);
    bool ok = httpc_json(t_client, "GET", url, NULL, request_id, status, out, err);
    free(url);
    if (!ok) ts_err_prefix(err, "tessera-auth");
    return ok;
}

bool authc_session_context(const char *access_key, const char *group, const char *request_id,
                           long *status, json_t **out, ts_err *err)
{
    *out = NULL;
    *status = 0;
    ctx_cache *c = g_cache;
    uint64_t gen = 0;
    if (c) {
        json_t *hit = ctx_cache_get(c, access_key, group, ts_now_mono_ms(), &gen);
        if (hit) {
            *status = 200;
            *out = hit;
            return true;
        }
    }
    if (!_fetch(access_key, group, request_id, status, out, err)) return false;
    /* Nothing is kept before the invalidation consumer is live: an event
     * published meanwhile would be missed. */
    if (c && *status == 200 && json_is_object(*out) && auth_events_live())
        ctx_cache_put(c, access_key, group, *out, gen, ts_now_mono_ms());
    return true;
}
