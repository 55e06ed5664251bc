/* authctx.c: tessera-auth's session contexts, through the cache (authctx.h). */
#include "libcommon/authctx.h"

#include "libcommon/auth_events.h"
#include "libcommon/authcache.h"
#include "libcommon/httpc.h"
#include "libcommon/sign.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct authctx {
    authctx_opts o;
    pthread_key_t client_key;      /* each HTTP worker's own keep-alive client */
    _Atomic(authcache *) cache;    /* NULL: caching off (or not started yet) */
    _Atomic(auth_events *) events; /* its invalidation consumer */
};

/* What one authctx_get hands its fetch, and gets back for an answer that is
 * not a context (a 404, a 403 ...: never kept). */
typedef struct fetch_arg {
    const char *request_id;
    long status;
    json_t *body;
} fetch_arg;

static void _client_free(void *c)
{
    httpc_free(c);
}

authctx *authctx_new(const authctx_opts *o)
{
    authctx *a = ts_calloc(1, sizeof(*a));
    a->o = *o;
    if (pthread_key_create(&a->client_key, _client_free) != 0)
        ts_panic("pthread_key_create failed");
    return a;
}

static httpc *_client(authctx *a)
{
    httpc *c = pthread_getspecific(a->client_key);
    if (!c) {
        c = httpc_new_internal((int)a->o.timeout_ms);
        pthread_setspecific(a->client_key, c);
    }
    return c;
}

/* authcache_fetch_fn: GET <auth>/v1/session-context?access_key=[&group=]. */
static authcache_result _fetch(void *ctx, const char *ak, const char *group, void *arg,
                               void **value, ts_err *err)
{
    authctx *a = ctx;
    fetch_arg *fa = arg;
    httpc *client = _client(a); /* first: it initializes libcurl */
    char *eak = curl_easy_escape(NULL, ak, 0);
    char *eg = group ? curl_easy_escape(NULL, group, 0) : NULL;
    char *url = ts_asprintf("%s/v1/session-context?access_key=%s%s%s", a->o.auth_url,
                            eak ? eak : "", group ? "&group=" : "", eg ? eg : "");
    curl_free(eak);
    curl_free(eg);
    long status = 0;
    json_t *body = NULL;
    bool ok = httpc_json(client, "GET", url, NULL, fa->request_id, &status, &body, err);
    free(url);
    if (!ok) {
        ts_err_prefix(err, "tessera-auth");
        return AUTHCACHE_UNAVAILABLE;
    }
    if (status == 200 && json_is_object(body)) {
        *value = body;
        return AUTHCACHE_FOUND;
    }
    fa->status = status;
    fa->body = body;
    return AUTHCACHE_NOT_FOUND;
}

bool authctx_get(authctx *a, const char *access_key, const char *group, const char *request_id,
                 long *status, json_t **body, ts_err *err)
{
    *status = 0;
    *body = NULL;
    fetch_arg fa = {.request_id = request_id};
    void *v = NULL;
    authcache *c = atomic_load(&a->cache);
    authcache_result r = c ? authcache_get(c, access_key, group, &fa, &v, err)
                           : _fetch(a, access_key, group, &fa, &v, err);
    if (r == AUTHCACHE_UNAVAILABLE) return false;
    if (r == AUTHCACHE_FOUND) {
        *status = 200;
        *body = v;
    } else {
        *status = fa.status;
        *body = fa.body;
    }
    return true;
}

/* ---- the cache and its consumer --------------------------------------------------- */

static void *_copy(const void *v)
{
    return json_deep_copy(v);
}

static void _free(void *v)
{
    json_decref(v);
}

static const char *_user_of(const void *v)
{
    return authctx_user_field(v, "id");
}

/* Nothing is kept before the consumer is live: an event published
 * meanwhile would be missed. */
static bool _may_keep(void *ev)
{
    return auth_events_live(ev);
}

static void _collect(FILE *out, void *ctx)
{
    authctx *a = ctx;
    char name[128];
    snprintf(name, sizeof(name), "%s_context_cache", a->o.metrics_prefix);
    authcache_metrics(out, atomic_load(&a->cache), name, "session contexts");
    snprintf(name, sizeof(name), "%s_auth_events_total", a->o.metrics_prefix);
    auth_events_metrics(out, atomic_load(&a->events), name);
}

bool authctx_start(authctx *a, svc *s, ts_err *err)
{
    metrics_add(svc_metrics(s), _collect, a);
    if (a->o.cache_ttl_ms <= 0) return true;
    auth_events *ev = auth_events_new();
    authcache_opts co = {
        .max_entries = (size_t)(a->o.cache_entries > 0 ? a->o.cache_entries : 1),
        .ttl_ms = a->o.cache_ttl_ms,
        .fetch = _fetch,
        .fetch_ctx = a,
        .copy = _copy,
        .free = _free,
        .user_of = _user_of,
        .may_keep = _may_keep,
        .may_keep_ctx = ev,
    };
    authcache *c = authcache_new(&co);
    auth_events_add(ev, c, AUTH_EVENTS_CONTEXTS, "contexts");
    if (!auth_events_start(ev, s, err)) {
        auth_events_free(ev);
        authcache_free(c);
        return false;
    }
    atomic_store(&a->events, ev);
    atomic_store(&a->cache, c);
    return true;
}

void authctx_stop(authctx *a)
{
    auth_events_stop(atomic_load(&a->events));
}

/* ---- the caller ------------------------------------------------------------------- */

authctx_caller authctx_caller_of(const http_req *req, const char **user_id, const char **access_key)
{
    *user_id = http_header(req, "X-Tessera-Caller");
    *access_key = http_header(req, "X-Tessera-Caller-Access-Key");
    if (!*user_id || !ts_uuid_valid(*user_id)) return AUTHCTX_CALLER_NONE;
    if (!*access_key || strlen(*access_key) != SIGN_ACCESS_KEY_LEN) return AUTHCTX_CALLER_BAD_KEY;
    return AUTHCTX_CALLER_OK;
}

const char *authctx_user_field(const json_t *ctx, const char *name)
{
    const char *v = json_string_value(json_object_get(json_object_get(ctx, "user"), name));
    return v ? v : "";
}

authctx_verdict authctx_check(const json_t *ctx, const char *user_id)
{
    if (user_id && strcmp(authctx_user_field(ctx, "id"), user_id) != 0) return AUTHCTX_NOT_CALLERS;
    if (!json_is_true(json_object_get(ctx, "is_active"))) return AUTHCTX_KEY_INACTIVE;
    if (strcmp(authctx_user_field(ctx, "status"), "active") != 0) return AUTHCTX_USER_INACTIVE;
    return AUTHCTX_ACTIVE;
}
