/* httpc.h: HTTP client on libcurl for internal calls. One httpc per thread
 * (libcurl easy handles are not shared); connections are kept alive and reused. */
#ifndef TESSERA_HTTPC_H
#define TESSERA_HTTPC_H

#include "libcommon/common.h"

#include <jansson.h>

typedef struct httpc httpc;

typedef struct httpc_resp {
    long status; /* 0 when no response arrived */
    char *body;  /* NUL-terminated, heap-owned */
    size_t body_len;
    char *content_type; /* heap-owned or NULL */
} httpc_resp;

httpc *httpc_new(int timeout_ms);
/* A client for calls to other Tessera services: each request is signed with
 * this process's service key (svcauth.h), X-Tessera-Caller and
 * X-Tessera-Caller-Access-Key among the headers included. Use httpc_new for
 * anything else (an OCI registry), which must not see the credential. */
httpc *httpc_new_internal(int timeout_ms);
void httpc_free(httpc *c);

/* headers: NULL-terminated "Name: value" strings, may be NULL. body may be NULL.
 * request_id, when given, is sent as X-Request-ID. False (err set) when no
 * response arrived (connect failure, timeout); any HTTP status is true. */
bool httpc_request(httpc *c, const char *method, const char *url, const char *const *headers,
                   const void *body, size_t body_len, const char *request_id, httpc_resp *out,
                   ts_err *err) TS_MUST_CHECK;
/* JSON in, JSON out (out_json NULL when the answer is not JSON). */
bool httpc_json(httpc *c, const char *method, const char *url, json_t *body, const char *request_id,
                long *status, json_t **out_json, ts_err *err) TS_MUST_CHECK;
void httpc_resp_free(httpc_resp *r);

#endif
