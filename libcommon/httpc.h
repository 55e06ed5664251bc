/* httpc.h: HTTP client on libcurl for internal calls. One httpc per thread
 * (libcurl easy handles are not shared); connections are kept alive and reused. */
#ifndef TESSERA_HTTPC_H
#define TESSERA_HTTPC_H

#include "libcommon/common.h"

#include <jansson.h>

typedef struct httpc httpc;

#define HTTPC_KEEP_MAX 8

typedef struct httpc_resp {
    long status; /* 0 when no response arrived */
    char *body;  /* NUL-terminated, heap-owned */
    size_t body_len;
    char *content_type; /* heap-owned or NULL */
    /* The response headers httpc_call.keep_headers names, as they arrived
     * (the final response's, values trimmed; at most HTTPC_KEEP_MAX). */
    size_t n_headers;
    char *header_names[HTTPC_KEEP_MAX], *header_values[HTTPC_KEEP_MAX];
    bool timed_out; /* no response: the time limit passed */
} httpc_resp;

/* Settings of one request (httpc_request_ex); zero fields: the client's. */
typedef struct httpc_call {
    int timeout_ms;                  /* the whole request; 0: the client's */
    int connect_timeout_ms;          /* 0: the timeout */
    size_t max_body;                 /* larger answers fail; 0: 64 MiB */
    const char *const *keep_headers; /* NULL-terminated response header names to keep */
} httpc_call;

httpc *httpc_new(int timeout_ms);
/* A client for calls to other Tessera services: each request is signed with
 * this process's service key (svcauth.h), X-Tessera-Caller and
 * X-Tessera-Caller-Access-Key among the headers included. Use httpc_new for
 * anything else (an OCI registry), which must not see the credential. */
httpc *httpc_new_internal(int timeout_ms);
/* The CA certificates (PEM file) that internal clients (httpc_new_internal)
 * trust for https:// URLs, e.g. an agent's https addr, instead of the
 * system's; NULL or "" = the system's. Set once at start-up (http.ca_file),
 * before any call; false when the file cannot be read. */
bool httpc_set_ca_file(const char *path, ts_err *err) TS_MUST_CHECK;
/* An unsigned client (httpc_new) that calls Tessera services all the same
 * (the gateway's status probes): trust http.ca_file as internal ones do. */
void httpc_trust_internal(httpc *c);
/* This client trusts the CA certificates in path (PEM) for https:// URLs
 * instead of the system's (the registry's client of an OCI registry with a
 * certificate of the cluster's CA: oci.ca_file); NULL or "" = the system's.
 * path must outlive c. */
void httpc_use_ca_file(httpc *c, const char *path);
void httpc_free(httpc *c);

/* headers: NULL-terminated "Name: value" strings, may be NULL. body may be NULL.
 * request_id, when given, is sent as X-Request-ID. False (err set) when no
 * response arrived (connect failure, timeout); any HTTP status is true. */
bool httpc_request(httpc *c, const char *method, const char *url, const char *const *headers,
                   const void *body, size_t body_len, const char *request_id, httpc_resp *out,
                   ts_err *err) TS_MUST_CHECK;
/* httpc_request with call's settings (NULL: none). */
bool httpc_request_ex(httpc *c, const httpc_call *call, const char *method, const char *url,
                      const char *const *headers, const void *body, size_t body_len,
                      const char *request_id, httpc_resp *out, ts_err *err) TS_MUST_CHECK;
/* JSON in, JSON out (out_json NULL when the answer is not JSON). */
bool httpc_json(httpc *c, const char *method, const char *url, json_t *body, const char *request_id,
                long *status, json_t **out_json, ts_err *err) TS_MUST_CHECK;
void httpc_resp_free(httpc_resp *r);

/* s percent-encoded for one URL path segment or query value (heap): all but
 * A-Z a-z 0-9 - _ . ~, and "." and ".." in full (a client would collapse them
 * as a path segment). */
char *httpc_escape(const char *s);

#endif
