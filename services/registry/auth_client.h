/* auth_client.h: the registry's client of tessera-auth's session contexts
 * (libcommon/authctx.h), configured from auth.url, auth.timeout,
 * registry.context_cache_ttl and registry.context_cache_entries: with a TTL
 * > 0, auth's 200 answers are kept (metrics tessera_registry_context_cache_*,
 * tessera_registry_auth_events_total) and dropped earlier on tessera.auth.v1
 * events. caller.c resolves callers through it. */
#ifndef REGISTRY_AUTH_CLIENT_H
#define REGISTRY_AUTH_CLIENT_H

#include "libcommon/authctx.h"
#include "context.h"

/* The cache, its invalidation consumer and metrics (start hook); no cache
 * and no consumer when registry.context_cache_ttl is 0. */
bool authc_start(svc *s, ts_err *err) TS_MUST_CHECK;
void authc_stop(void);

/* The client (made on first use, from the loaded configuration). */
authctx *authc(void);

#endif
