/* auth_client.h: tessera-auth's GET /v1/session-context (auth.url), one
 * libcurl handle per thread. */
#ifndef REGISTRY_AUTH_CLIENT_H
#define REGISTRY_AUTH_CLIENT_H

#include "registry.h"

/* *status: auth's HTTP status (0 when it did not answer: err says why);
 * *out: its JSON body (the context, or a problem), caller-owned. */
bool authc_session_context(const char *access_key, const char *group, const char *request_id,
                           long *status, json_t **out, ts_err *err) TS_MUST_CHECK;

#endif
