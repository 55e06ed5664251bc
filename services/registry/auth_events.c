/* auth_events.c: tessera.auth.v1 -> the context cache (auth_events.h). */
#include "auth_events.h"

#include "libcommon/kbus.h"
#include "libcommon/log.h"
#include "libcommon/sign.h"
#include "tessera/v1/auth.pb-c.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static kbus_consumer *g_consumer;
static ctx_cache *g_cache;
static atomic_bool g_live; /* latched: a broadcast group of one keeps its partitions */
static _Atomic uint64_t g_events;

static bool _is_access_key(const char *s)
{
    if (!s || strlen(s) != SIGN_ACCESS_KEY_LEN) return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))) return false;
    return true;
}

/* The access key of KeypairRevoked / KeypairChanged (both carry it as
 * field 1), else the record key; NULL when neither looks like one. */
static char *_keypair_of(bool changed, const uint8_t *payload, size_t len, const char *key)
{
    char *ak = NULL;
    if (changed) {
        Tessera__V1__KeypairChanged *m = tessera__v1__keypair_changed__unpack(NULL, len, payload);
        if (m && _is_access_key(m->access_key)) ak = ts_strdup(m->access_key);
        if (m) tessera__v1__keypair_changed__free_unpacked(m, NULL);
    } else {
        Tessera__V1__KeypairRevoked *m = tessera__v1__keypair_revoked__unpack(NULL, len, payload);
        if (m && _is_access_key(m->access_key)) ak = ts_strdup(m->access_key);
        if (m) tessera__v1__keypair_revoked__free_unpacked(m, NULL);
    }
    if (!ak && _is_access_key(key)) ak = ts_strdup(key);
    return ak;
}

/* The user id of UserChanged (a UUID), else the record key; NULL when
 * neither is one. *super: the user is (now) a superadmin. */
static char *_user_of(const uint8_t *payload, size_t len, const char *key, bool *super)
{
    char *id = NULL;
    Tessera__V1__UserChanged *m = tessera__v1__user_changed__unpack(NULL, len, payload);
    if (m && m->user_id && ts_uuid_valid(m->user_id)) id = ts_strdup(m->user_id);
    *super = m && m->role && strcmp(m->role, "superadmin") == 0;
    if (m) tessera__v1__user_changed__free_unpacked(m, NULL);
    if (!id && key && ts_uuid_valid(key)) id = ts_strdup(key);
    return id;
}

void auth_events_apply(ctx_cache *cache, const char *type, const uint8_t *payload, size_t len,
                       const char *key)
{
    type = type ? type : "";
    bool changed = strcmp(type, "tessera.v1.KeypairChanged") == 0;
    if (changed || strcmp(type, "tessera.v1.KeypairRevoked") == 0) {
        char *ak = _keypair_of(changed, payload, len, key);
        if (ak) {
            ctx_cache_drop_key(cache, ak);
            TLOG_DEBUG("context cache: key dropped", "access_key=%s event=%s", ak, type);
            free(ak);
            return;
        }
    } else if (strcmp(type, "tessera.v1.UserChanged") == 0) {
        bool super = false;
        char *user = _user_of(payload, len, key, &super);
        /* a superadmin's change also changes its domain admins' contexts
         * (their domain_superadmins): those are dropped with everything */
        if (user && !super) {
            ctx_cache_drop_user(cache, user);
            TLOG_DEBUG("context cache: user's entries dropped", "user_id=%s", user);
            free(user);
            return;
        }
        free(user);
    }
    /* Policies, domains, projects, memberships, resource group access (each
     * may touch many contexts), what we cannot attribute, types we do not
     * know: forget everything (rare; the cache refills on demand). */
    ctx_cache_drop_all(cache);
    TLOG_DEBUG("context cache: everything dropped", "event=%s", type);
}

static kbus_result _on_event(const kbus_msg *msg, void *ctx, ts_err *reason)
{
    (void)ctx;
    (void)reason;
    atomic_fetch_add(&g_events, 1);
    const Tessera__V1__Envelope *env = msg->env;
    auth_events_apply(g_cache, env->type, env->payload.data, env->payload.len, msg->key);
    return KBUS_DONE;
}

bool auth_events_live(void)
{
    if (atomic_load(&g_live)) return true;
    if (!g_consumer || !kbus_consumer_assigned(g_consumer)) return false;
    atomic_store(&g_live, true);
    TLOG_INFO("auth events consumer has its partitions: contexts are cached now", "topic=%s",
              AUTH_EVENTS_TOPIC);
    return true;
}

uint64_t auth_events_count(void)
{
    return atomic_load(&g_events);
}

static bool _check(svc *s, void *ctx, ts_err *err)
{
    (void)s;
    (void)ctx;
    if (auth_events_live()) return true;
    ts_err_set(err, "%s consumer not assigned yet (contexts are not cached before)",
               AUTH_EVENTS_TOPIC);
    return false;
}

bool auth_events_start(svc *s, ctx_cache *cache, ts_err *err)
{
    static const char *const topics[] = {AUTH_EVENTS_TOPIC, NULL};
    g_cache = cache;
    atomic_store(&g_live, false);
    g_consumer = kbus_consume_broadcast(svc_bus(s), topics, _on_event, NULL, err);
    if (!g_consumer) {
        ts_err_prefix(err, "auth events consumer");
        return false;
    }
    svc_add_check(s, "auth-events", _check, NULL);
    return true;
}

void auth_events_stop(void)
{
    kbus_consumer_stop(g_consumer);
    g_consumer = NULL;
    atomic_store(&g_live, false);
}
