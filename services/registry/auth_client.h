/* auth_client.h: tessera-auth's GET /v1/session-context (auth.url), one
 * libcurl handle per thread, and the registry's cache of its answers
 * (context_cache.h): with registry.context_cache_ttl > 0, a 200 is kept for
 * that long (at most registry.context_cache_entries of them), dropped
 * earlier on tessera.auth.v1 events (auth_events.h). Errors are never kept. */
#ifndef REGISTRY_AUTH_CLIENT_H
#define REGISTRY_AUTH_CLIENT_H

#include "registry.h"

/* The cache, its invalidation consumer and metrics (start hook); nothing
 * when registry.context_cache_ttl is 0. */
bool authc_start(svc *s, ts_err *err) TS_MUST_CHECK;
void authc_stop(void);

/* *status: auth's HTTP status (0 when it did not answer: err says why);
 * *out: its JSON body (the context, or a problem), caller-owned. A cached
 * context answers 200 without asking auth. */
bool authc_session_context(const char *access_key, const char *group, const char *request_id,
                           long *status, json_t **out, ts_err *err) TS_MUST_CHECK;

#endif
