/* http_request.h: the request behind http.h's http_req, shared by the HTTP
 * server (http_server.c: requests from a connection) and http_request.c
 * (headers and query arguments, locally built requests, streaming routes'
 * registration, streamed response bodies). Not for use outside libcommon's
 * http_*.c. */
#ifndef TESSERA_HTTP_REQUEST_H
#define TESSERA_HTTP_REQUEST_H

#include "libcommon/http.h"

#include <stdint.h>

#define REQUEST_ID_MAX 64

/* What a body reader answers when it suspended its connection and has
 * nothing yet (http_events.c): libmicrohttpd calls it again once resumed. */
#define HTTP_READ_SUSPENDED (-2)

/* A streamed response body (http_reply_fd, http_reply_reader). */
enum { SRC_NONE, SRC_FD, SRC_READER, SRC_UPGRADE };
typedef struct body_src {
    int kind;
    int status; /* the reply it belongs to */
    int fd;
    uint64_t offset, len;
    http_body_reader read;
    http_on_upgraded upgraded; /* SRC_UPGRADE (http_upgrade.c) */
    void (*release)(void *cls);
    void *cls;
} body_src;

typedef struct stream_route {
    http_stream_handler h;
    void *ctx;
} stream_route;

/* What req->impl points to: the connection (served) or the headers (local),
 * and strings handed out for the life of the request. */
struct http_req_impl {
    struct MHD_Connection *conn;
    char **headers; /* local requests: "Name: value" */
    size_t n_headers;
    char **scratch;
    size_t n_scratch, cap_scratch;
    body_src src;
    struct http_upgrade_box *upgrade; /* the upgrade response made from src */
    /* Set by the stream router's trampoline while the server probes. */
    const stream_route *probe_hit;
    int n_params;
    const char *param_names[HTTP_MAX_PARAMS];
    const char *param_values[HTTP_MAX_PARAMS];
};

/* Keep s (heap) for the life of the request; returns s. */
const char *http_req_keep(struct http_req_impl *impl, char *s);
/* Close or release a streamed body's source; it is empty after. */
void http_src_release(body_src *src);
/* Free what the request holds (kept strings, local headers, its body source). */
void http_impl_release(struct http_req_impl *impl);
/* The request id: given when it is sane ([A-Za-z0-9._-], 1 to 64), else a new UUID. */
void http_req_pick_id(const char *given, char out[REQUEST_ID_MAX + 1]);
/* path: the decoded path without the query; query: raw, without '?'. A
 * target that is not origin-form keeps fallback (MHD's decoded url) as path. */
void http_split_target(const char *target, const char *fallback, char **path, char **query);
/* The streamed body source that still belongs to the response resp holds
 * (not replaced since), or NULL. */
body_src *http_src_current(struct http_req_impl *impl, const http_resp *resp);
/* The private router of pub's streaming routes (made when create), or NULL. */
http_router *http_stream_router_of(http_router *pub, bool create);

#endif
