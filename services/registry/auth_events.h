/* auth_events.h: keeps the registry's context cache (context_cache.h) true
 * to tessera-auth by consuming tessera.auth.v1 with a broadcast consumer (a
 * group of its own per process, from the latest offset):
 *   KeypairRevoked, KeypairChanged -> drop that access key's entries;
 *   UserChanged                    -> drop the entries of that user;
 *   anything else (PolicyChanged, DomainChanged, ProjectChanged,
 *   ProjectMembersChanged, ResourceGroupAccessChanged, a type not known
 *   here, an event whose subject cannot be read) -> drop everything.
 * Adds the readiness check "auth-events". Until the consumer has its
 * partitions, auth_events_live() is false and nothing is put in the cache
 * (a revocation published meanwhile would be missed). */
#ifndef REGISTRY_AUTH_EVENTS_H
#define REGISTRY_AUTH_EVENTS_H

#include "context_cache.h"
#include "libcommon/svc.h"

#define AUTH_EVENTS_TOPIC "tessera.auth.v1"

bool auth_events_start(svc *s, ctx_cache *cache, ts_err *err) TS_MUST_CHECK;
void auth_events_stop(void);
/* True once the consumer has been assigned its partitions (latched). */
bool auth_events_live(void);
/* Events applied since the start. */
uint64_t auth_events_count(void);

/* Apply one event (type: the envelope's type; payload: its bytes; key: the
 * record key, may be NULL) to cache. Never fails: what it cannot read drops
 * everything. */
void auth_events_apply(ctx_cache *cache, const char *type, const uint8_t *payload, size_t len,
                       const char *key);

#endif
