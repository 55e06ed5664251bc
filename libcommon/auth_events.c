/* auth_events.c: tessera.auth.v1 -> the registered caches (auth_events.h). */
#include "libcommon/auth_events.h"

#include "libcommon/kbus.h"
#include "libcommon/log.h"
#include "libcommon/metrics.h"
#include "libcommon/sign.h"
#include "tessera/v1/auth.pb-c.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CACHES 4

typedef struct registered {
    authcache *cache;
    auth_events_holds holds;
    const char *name;
} registered;

struct auth_events {
    registered caches[MAX_CACHES];
    int n;
    kbus_consumer *consumer;
    atomic_bool live; /* latched: a broadcast group of one keeps its partitions */
    _Atomic uint64_t events;
};

typedef enum event_kind { EV_KEYPAIR, EV_USER, EV_PROJECT, EV_OTHER } event_kind;

/* What an event says, read once for every cache. */
typedef struct reading {
    event_kind kind;
    char access_key[SIGN_ACCESS_KEY_LEN + 1]; /* EV_KEYPAIR: "" when none could be read */
    char user_id[TS_UUID_STRLEN];             /* EV_USER: "" when none */
    bool superadmin;                          /* EV_USER: the user is (now) a superadmin */
} reading;

typedef enum scope { SCOPE_NONE, SCOPE_KEY, SCOPE_USER, SCOPE_ALL } scope;
static const char *const SCOPE_NAMES[] = {"none", "key", "user", "all"};

auth_events *auth_events_new(void)
{
    return ts_calloc(1, sizeof(auth_events));
}

void auth_events_add(auth_events *ev, authcache *c, auth_events_holds holds, const char *name)
{
    ts_assert(ev->n < MAX_CACHES);
    ev->caches[ev->n++] = (registered){.cache = c, .holds = holds, .name = name};
}

/* ---- reading an event ------------------------------------------------------------- */

static bool _is_access_key(const char *s)
{
    if (!s || strlen(s) != SIGN_ACCESS_KEY_LEN) return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))) return false;
    return true;
}

/* The first of the candidates that looks like an access key, into out. */
static void _pick_access_key(char *out, size_t size, const char *const *cands, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (_is_access_key(cands[i])) {
            ts_strlcpy(out, cands[i], size);
            return;
        }
    }
}

/* KeypairRevoked / KeypairChanged: both carry the key as access_key. */
static void _read_keypair(bool changed, const uint8_t *payload, size_t len, const char *key,
                          const char *subject, reading *out)
{
    out->kind = EV_KEYPAIR;
    if (changed) {
        Tessera__V1__KeypairChanged *m = tessera__v1__keypair_changed__unpack(NULL, len, payload);
        const char *cands[] = {m ? m->access_key : NULL, key, subject};
        _pick_access_key(out->access_key, sizeof(out->access_key), cands, TS_ARRAY_LEN(cands));
        if (m) tessera__v1__keypair_changed__free_unpacked(m, NULL);
    } else {
        Tessera__V1__KeypairRevoked *m = tessera__v1__keypair_revoked__unpack(NULL, len, payload);
        const char *cands[] = {m ? m->access_key : NULL, key, subject};
        _pick_access_key(out->access_key, sizeof(out->access_key), cands, TS_ARRAY_LEN(cands));
        if (m) tessera__v1__keypair_revoked__free_unpacked(m, NULL);
    }
}

static void _read_user(const uint8_t *payload, size_t len, const char *key, reading *out)
{
    out->kind = EV_USER;
    Tessera__V1__UserChanged *m = tessera__v1__user_changed__unpack(NULL, len, payload);
    if (m && m->user_id && ts_uuid_valid(m->user_id))
        ts_strlcpy(out->user_id, m->user_id, sizeof(out->user_id));
    else if (key && ts_uuid_valid(key))
        ts_strlcpy(out->user_id, key, sizeof(out->user_id));
    out->superadmin = m && m->role && strcmp(m->role, "superadmin") == 0;
    if (m) tessera__v1__user_changed__free_unpacked(m, NULL);
}

static void _read(const char *type, const uint8_t *payload, size_t len, const char *key,
                  const char *subject, reading *out)
{
    memset(out, 0, sizeof(*out));
    bool changed = strcmp(type, "tessera.v1.KeypairChanged") == 0;
    if (changed || strcmp(type, "tessera.v1.KeypairRevoked") == 0)
        _read_keypair(changed, payload, len, key, subject, out);
    else if (strcmp(type, "tessera.v1.UserChanged") == 0)
        _read_user(payload, len, key, out);
    else if (strcmp(type, "tessera.v1.ProjectChanged") == 0 ||
             strcmp(type, "tessera.v1.ProjectMembersChanged") == 0 ||
             strcmp(type, "tessera.v1.ResourceGroupAccessChanged") == 0)
        out->kind = EV_PROJECT;
    else
        out->kind = EV_OTHER;
}

/* What the event drops from a cache that holds what holds says. */
static scope _scope_for(const reading *r, auth_events_holds holds)
{
    switch (r->kind) {
    case EV_KEYPAIR:
        return r->access_key[0] ? SCOPE_KEY : SCOPE_ALL;
    case EV_USER:
        /* a superadmin's change also changes its domain admins' contexts
         * (their domain_superadmins): those go with everything */
        if (!r->user_id[0] || (holds == AUTH_EVENTS_CONTEXTS && r->superadmin)) return SCOPE_ALL;
        return SCOPE_USER;
    case EV_PROJECT:
        /* what a session may use, not who a key is */
        return holds == AUTH_EVENTS_CREDENTIALS ? SCOPE_NONE : SCOPE_ALL;
    case EV_OTHER:
        break;
    }
    /* policies, domains, a type we do not know: forget everything (rare
     * events; the caches refill on demand) */
    return SCOPE_ALL;
}

void auth_events_apply(auth_events *ev, const char *type, const uint8_t *payload, size_t len,
                       const char *key, const char *subject)
{
    type = type ? type : "";
    reading r;
    _read(type, payload, len, key, subject, &r);
    if (r.access_key[0]) tlog_ctx_access_key(r.access_key);
    if (r.user_id[0]) tlog_ctx_user(r.user_id);
    for (int i = 0; i < ev->n; i++) {
        const registered *reg = &ev->caches[i];
        scope s = _scope_for(&r, reg->holds);
        if (s == SCOPE_KEY)
            authcache_drop_key(reg->cache, r.access_key);
        else if (s == SCOPE_USER)
            authcache_drop_user(reg->cache, r.user_id);
        else if (s == SCOPE_ALL)
            authcache_drop_all(reg->cache);
        TLOG(s == SCOPE_NONE ? TLOG_LEVEL_DEBUG : TLOG_LEVEL_INFO, "auth event applied",
             "event=%s cache=%s dropped=%s", type, reg->name, SCOPE_NAMES[s]);
    }
}

/* ---- the consumer ----------------------------------------------------------------- */

static kbus_result _on_event(const kbus_msg *msg, void *ctx, ts_err *reason)
{
    (void)reason;
    auth_events *ev = ctx;
    atomic_fetch_add(&ev->events, 1);
    const Tessera__V1__Envelope *env = msg->env;
    auth_events_apply(ev, env->type, env->payload.data, env->payload.len, msg->key,
                      env->subject_id);
    return KBUS_DONE;
}

bool auth_events_live(auth_events *ev)
{
    if (atomic_load(&ev->live)) return true;
    if (!ev->consumer || !kbus_consumer_assigned(ev->consumer)) return false;
    if (!atomic_exchange(&ev->live, true))
        TLOG_INFO("auth events consumer has its partitions", "topic=%s", AUTH_EVENTS_TOPIC);
    return true;
}

static bool _check(svc *s, void *ctx, ts_err *err)
{
    (void)s;
    if (auth_events_live(ctx)) return true;
    ts_err_set(err, "%s consumer not assigned yet (a revocation published now would be missed)",
               AUTH_EVENTS_TOPIC);
    return false;
}

bool auth_events_start(auth_events *ev, svc *s, ts_err *err)
{
    static const char *const topics[] = {AUTH_EVENTS_TOPIC, NULL};
    atomic_store(&ev->live, false);
    ev->consumer = kbus_consume_broadcast(svc_bus(s), topics, _on_event, ev, err);
    if (!ev->consumer) {
        ts_err_prefix(err, "auth events consumer");
        return false;
    }
    svc_add_check(s, "auth-events", _check, ev);
    return true;
}

void auth_events_stop(auth_events *ev)
{
    if (!ev || !ev->consumer) return;
    kbus_consumer_stop(ev->consumer);
    ev->consumer = NULL;
    atomic_store(&ev->live, false);
}

void auth_events_free(auth_events *ev)
{
    auth_events_stop(ev);
    free(ev);
}

uint64_t auth_events_count(const auth_events *ev)
{
    return ev ? atomic_load(&ev->events) : 0;
}

void auth_events_metrics(FILE *out, const auth_events *ev, const char *name)
{
    metrics_family(out, name, "counter", "tessera.auth.v1 events applied to the caches.");
    metrics_sample_u64(out, name, NULL, auth_events_count(ev));
}
