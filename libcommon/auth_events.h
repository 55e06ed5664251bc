/* auth_events.h: keeps a service's caches of tessera-auth's answers
 * (authcache.h) true to tessera-auth, by consuming tessera.auth.v1 with a
 * broadcast consumer (a group of its own per process, from the latest
 * offset, so every instance sees every change).
 *
 * Each cache is registered with what it holds, which says what an event
 * drops from it:
 *   event                               CREDENTIALS        CONTEXTS
 *   KeypairRevoked, KeypairChanged      that access key    that access key
 *   UserChanged                         that user's keys   that user's entries
 *                                                          (a superadmin: all,
 *                                                          its domain admins'
 *                                                          contexts list it)
 *   ProjectChanged, ProjectMembersChanged,
 *   ResourceGroupAccessChanged          nothing            all
 *   PolicyChanged, DomainChanged, a type
 *   not known here, an event whose
 *   subject cannot be read              all                all
 * The access key is the payload's (a 20-character key), else the record
 * key's, else the envelope subject's; the user id the payload's (a UUID),
 * else the record key's.
 *
 * auth_events_start adds the readiness check "auth-events", green once the consumer has its
 * partitions (before that, a revocation could be missed); auth_events_live()
 * says the same (a cache's may_keep, for caches that must keep nothing
 * before). */
#ifndef TESSERA_AUTH_EVENTS_H
#define TESSERA_AUTH_EVENTS_H

#include "libcommon/authcache.h"
#include "libcommon/svc.h"

#define AUTH_EVENTS_TOPIC "tessera.auth.v1"

typedef enum auth_events_holds {
    /* who a key is: secret, owner, statuses, rate limit (the gateway's) */
    AUTH_EVENTS_CREDENTIALS,
    /* what a key may do: role, domain, policies, projects, resource groups */
    AUTH_EVENTS_CONTEXTS,
} auth_events_holds;

typedef struct auth_events auth_events;

auth_events *auth_events_new(void);
/* Register a cache (before auth_events_start); name is for the log lines
 * ("credentials"). At most 4. */
void auth_events_add(auth_events *ev, authcache *c, auth_events_holds holds, const char *name);

/* Start consuming, and add the readiness check. */
bool auth_events_start(auth_events *ev, svc *s, ts_err *err) TS_MUST_CHECK;
/* Stop consuming (the caches stay). ev may be NULL. */
void auth_events_stop(auth_events *ev);
/* Stop and free (not the caches). ev may be NULL. */
void auth_events_free(auth_events *ev);
/* True once the consumer has been assigned its partitions (latched). */
bool auth_events_live(auth_events *ev) TS_MUST_CHECK;
/* Events applied since the start (0 for NULL). */
uint64_t auth_events_count(const auth_events *ev);
/* That count as the Prometheus counter name ("tessera_gateway_auth_events_total"). */
void auth_events_metrics(FILE *out, const auth_events *ev, const char *name);

/* Apply one event to the registered caches (type: the envelope's type;
 * payload: its bytes; key: the record key, subject: the envelope's
 * subject_id, either may be NULL). Never fails: what it cannot read drops
 * everything. */
void auth_events_apply(auth_events *ev, const char *type, const uint8_t *payload, size_t len,
                       const char *key, const char *subject);

#endif
