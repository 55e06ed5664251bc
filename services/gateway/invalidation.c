/* invalidation.c: tessera.auth.v1 -> credential cache (invalidation.h). */
#include "invalidation.h"

#include "cred_cache.h"
#include "libcommon/log.h"
#include "tessera/v1/auth.pb-c.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct invalidation {
    kbus_consumer *consumer;
    atomic_bool assigned; /* latched: a broadcast group of one keeps its partitions */
    _Atomic uint64_t events;
};

static bool _is_access_key(const char *s)
{
    if (!s || strlen(s) != SIGN_ACCESS_KEY_LEN) return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))) return false;
    return true;
}

/* The access key a keypair event names (KeypairRevoked or KeypairChanged:
 * both carry it as access_key), else the record key or the envelope's
 * subject. NULL when none looks like one. */
static char *_event_access_key(const kbus_msg *msg, bool changed)
{
    const Tessera__V1__Envelope *env = msg->env;
    char *ak = NULL;
    if (changed) {
        Tessera__V1__KeypairChanged *k =
            tessera__v1__keypair_changed__unpack(NULL, env->payload.len, env->payload.data);
        if (k && _is_access_key(k->access_key)) ak = ts_strdup(k->access_key);
        if (k) tessera__v1__keypair_changed__free_unpacked(k, NULL);
    } else {
        Tessera__V1__KeypairRevoked *k =
            tessera__v1__keypair_revoked__unpack(NULL, env->payload.len, env->payload.data);
        if (k && _is_access_key(k->access_key)) ak = ts_strdup(k->access_key);
        if (k) tessera__v1__keypair_revoked__free_unpacked(k, NULL);
    }
    if (!ak && _is_access_key(msg->key)) ak = ts_strdup(msg->key);
    if (!ak && _is_access_key(env->subject_id)) ak = ts_strdup(env->subject_id);
    return ak;
}

static char *_event_user_id(const kbus_msg *msg)
{
    const Tessera__V1__Envelope *env = msg->env;
    Tessera__V1__UserChanged *u =
        tessera__v1__user_changed__unpack(NULL, env->payload.len, env->payload.data);
    char *id = NULL;
    if (u && u->user_id && u->user_id[0]) id = ts_strdup(u->user_id);
    if (u) tessera__v1__user_changed__free_unpacked(u, NULL);
    if (!id && msg->key && msg->key[0]) id = ts_strdup(msg->key);
    return id;
}

static kbus_result _on_event(const kbus_msg *msg, void *ctx, ts_err *reason)
{
    (void)reason;
    gateway *gw = ctx;
    const char *type = msg->env->type ? msg->env->type : "";
    atomic_fetch_add(&gw->inval->events, 1);

    bool changed = strcmp(type, "tessera.v1.KeypairChanged") == 0;
    if (changed || strcmp(type, "tessera.v1.KeypairRevoked") == 0) {
        char *ak = _event_access_key(msg, changed);
        if (ak) {
            cred_cache_drop_key(gw->creds, ak);
            TLOG_INFO("credential cache: key dropped", "access_key=%s event=%s", ak, type);
            free(ak);
            return KBUS_DONE;
        }
    } else if (strcmp(type, "tessera.v1.UserChanged") == 0) {
        char *user = _event_user_id(msg);
        if (user) {
            cred_cache_drop_user(gw->creds, user);
            TLOG_INFO("credential cache: user's keys dropped", "user_id=%s", user);
            free(user);
            return KBUS_DONE;
        }
    } else if (strcmp(type, "tessera.v1.ProjectChanged") == 0 ||
               strcmp(type, "tessera.v1.ProjectMembersChanged") == 0 ||
               strcmp(type, "tessera.v1.ResourceGroupAccessChanged") == 0) {
        /* What a session may use, not who a key is: nothing cached here. */
        TLOG_DEBUG("credential cache: event ignored", "event=%s", type);
        return KBUS_DONE;
    }
    /* PolicyChanged, DomainChanged, an event we cannot attribute, or a type we do not know:
     * forget everything (rare events; the cache refills on demand). */
    cred_cache_drop_all(gw->creds);
    TLOG_INFO("credential cache: everything dropped", "event=%s", type);
    return KBUS_DONE;
}

static bool _check_assigned(svc *s, void *ctx, ts_err *err)
{
    (void)s;
    gateway *gw = ctx;
    invalidation *inv = gw->inval;
    if (atomic_load(&inv->assigned)) return true;
    if (kbus_consumer_assigned(inv->consumer)) {
        atomic_store(&inv->assigned, true);
        TLOG_INFO("auth events consumer has its partitions", "topic=%s", INVALIDATION_TOPIC);
        return true;
    }
    ts_err_set(err, "%s consumer not assigned yet (revocations would be missed)",
               INVALIDATION_TOPIC);
    return false;
}

static void _collect(FILE *out, void *ctx)
{
    gateway *gw = ctx;
    metrics_family(out, "tessera_gateway_auth_events_total", "counter",
                   "tessera.auth.v1 events applied to the credential cache.");
    metrics_sample_u64(out, "tessera_gateway_auth_events_total", NULL,
                       gw->inval ? atomic_load(&gw->inval->events) : 0);
}

bool invalidation_start(gateway *gw, ts_err *err)
{
    static const char *const topics[] = {INVALIDATION_TOPIC, NULL};
    invalidation *inv = ts_calloc(1, sizeof(*inv));
    gw->inval = inv;
    inv->consumer = kbus_consume_broadcast(svc_bus(gw->svc), topics, _on_event, gw, err);
    if (!inv->consumer) {
        ts_err_prefix(err, "auth events consumer");
        gw->inval = NULL;
        free(inv);
        return false;
    }
    svc_add_check(gw->svc, "auth-events", _check_assigned, gw);
    metrics_add(svc_metrics(gw->svc), _collect, gw);
    return true;
}

void invalidation_stop(gateway *gw)
{
    if (!gw->inval) return;
    kbus_consumer_stop(gw->inval->consumer);
    gw->inval->consumer = NULL;
}
