/* credentials.c: the access-key cache and its fetch from tessera-auth
 * (credentials.h). */
#include "credentials.h"

#include "libcommon/auth_events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct credentials {
    svc *svc;
    const upstream *auth;
    authcache *cache;
    auth_events *events;
};

static bool _copy_str(json_t *obj, const char *key, char *dst, size_t size, bool required)
{
    const char *v = json_string_value(json_object_get(obj, key));
    if (!v) {
        dst[0] = '\0';
        return !required;
    }
    if (strlen(v) >= size) return false;
    ts_strlcpy(dst, v, size);
    return true;
}

/* auth's answer about ak -> *out; false when it is malformed. */
static bool _parse(json_t *body, const char *ak, cred *out)
{
    json_t *user = json_object_get(body, "user");
    if (!_copy_str(body, "access_key", out->access_key, sizeof(out->access_key), true) ||
        strcmp(out->access_key, ak) != 0 ||
        !_copy_str(body, "secret_key", out->secret_key, sizeof(out->secret_key), true) ||
        strlen(out->secret_key) == 0 ||
        !_copy_str(user, "id", out->user_id, sizeof(out->user_id), true) ||
        !_copy_str(user, "role", out->role, sizeof(out->role), false) ||
        !_copy_str(user, "status", out->user_status, sizeof(out->user_status), true) ||
        !_copy_str(user, "domain_name", out->domain, sizeof(out->domain), false))
        return false;
    out->key_active = json_is_true(json_object_get(body, "is_active"));
    out->is_admin = json_is_true(json_object_get(body, "is_admin"));
    json_t *rl = json_object_get(body, "rate_limit");
    out->rate_limit = json_is_integer(rl) ? json_integer_value(rl) : 0;
    return true;
}

/* authcache_fetch_fn: GET <auth>/v1/credentials/{ak}. */
static authcache_result _fetch(void *ctx, const char *ak, const char *variant, void *arg,
                               void **value, ts_err *err)
{
    (void)variant;
    (void)arg;
    credentials *cr = ctx;
    char *url = ts_asprintf("%s/v1/credentials/%s", cr->auth->url, ak);
    long status = 0;
    json_t *body = NULL;
    bool ok = httpc_json(upstream_client(), "GET", url, NULL, NULL, &status, &body, err);
    free(url);
    if (!ok) {
        ts_err_prefix(err, "tessera-auth credential look-up");
        return AUTHCACHE_UNAVAILABLE;
    }
    authcache_result r = AUTHCACHE_UNAVAILABLE;
    cred *c = ts_calloc(1, sizeof(*c));
    if (status == 404) {
        r = AUTHCACHE_NOT_FOUND;
    } else if (status != 200 || !json_is_object(body) ||
               !json_is_object(json_object_get(body, "user"))) {
        ts_err_set(err, "tessera-auth credential look-up answered %ld%s", status,
                   status == 200 ? " without a user object" : "");
    } else if (!_parse(body, ak, c)) {
        ts_err_set(err, "tessera-auth credential look-up: malformed answer (access_key, "
                        "secret_key, user.id or user.status missing or too long)");
    } else {
        *value = c;
        c = NULL;
        r = AUTHCACHE_FOUND;
    }
    free(c);
    json_decref(body);
    return r;
}

static void *_copy(const void *v)
{
    cred *c = ts_malloc(sizeof(*c));
    *c = *(const cred *)v;
    return c;
}

/* Secrets do not linger in freed memory. */
static void _free(void *v)
{
    memset(((cred *)v)->secret_key, 0, SIGN_SECRET_KEY_LEN + 1);
    free(v);
}

static const char *_user_of(const void *v)
{
    return ((const cred *)v)->user_id;
}

static void _collect(FILE *out, void *ctx)
{
    credentials *cr = ctx;
    authcache_metrics(out, cr->cache, "tessera_gateway_cred_cache", "access keys");
    auth_events_metrics(out, cr->events, "tessera_gateway_auth_events_total");
}

credentials *credentials_new(svc *s, const upstream *auth, int64_t ttl_ms, int64_t negative_ttl_ms)
{
    credentials *cr = ts_calloc(1, sizeof(*cr));
    cr->svc = s;
    cr->auth = auth;
    authcache_opts o = {
        .max_entries = CREDENTIALS_MAX,
        .shards = 16,
        .ttl_ms = ttl_ms,
        .negative_ttl_ms = negative_ttl_ms,
        .wait_ms = CREDENTIALS_WAIT_MS,
        .error_ttl_ms = CREDENTIALS_ERROR_TTL_MS,
        .fetch = _fetch,
        .fetch_ctx = cr,
        .copy = _copy,
        .free = _free,
        .user_of = _user_of,
    };
    cr->cache = authcache_new(&o);
    cr->events = auth_events_new();
    auth_events_add(cr->events, cr->cache, AUTH_EVENTS_CREDENTIALS, "credentials");
    metrics_add(svc_metrics(s), _collect, cr);
    return cr;
}

bool credentials_start(credentials *cr, ts_err *err)
{
    return auth_events_start(cr->events, cr->svc, err);
}

void credentials_stop(credentials *cr)
{
    auth_events_stop(cr->events);
}

authcache_result credentials_get(credentials *cr, const char *access_key, cred *out, ts_err *err)
{
    void *v = NULL;
    authcache_result r = authcache_get(cr->cache, access_key, NULL, NULL, &v, err);
    if (r == AUTHCACHE_FOUND) {
        *out = *(cred *)v;
        _free(v);
    }
    return r;
}
