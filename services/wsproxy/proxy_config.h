/* proxy_config.h: the app proxy's settings (main.c fills them from the
 * wsproxy.* options; proxy_start copies them; every worker reads them). */
#ifndef WSPROXY_PROXY_CONFIG_H
#define WSPROXY_PROXY_CONFIG_H

#include "libcommon/common.h"
#include "libcommon/rds.h"

typedef struct proxy_config {
    const char *listen;         /* host:port; port 0 picks a free one */
    bool listen_shared;         /* other processes may listen there too (fixed port) */
    int workers;                /* >= 1 */
    size_t max_header;          /* largest request head; larger: 431 */
    size_t buffer_size;         /* per direction per connection */
    int64_t header_timeout_ms;  /* from accept / first byte to a complete head */
    int64_t idle_timeout_ms;    /* keep-alive wait for the next request */
    int64_t connect_timeout_ms; /* to the app */
    int64_t cookie_ttl_ms;      /* cookie minted from a token */
    int64_t cache_ttl_ms;       /* route and liveness cache (<= 1000) */
    int max_connections;        /* per worker */
    bool subdomain_mode;        /* public URL has "*": apps by Host */
    bool secure_cookies;        /* public URL is https */
    /* What the app never gets (strip.h): cookies besides tessera_app_*, and
     * header fields; the lists outlive the proxy. */
    const struct strip_list *strip_cookies;
    const struct strip_list *strip_headers;
    /* A Redis connection for the calling thread (each worker asks once); the
     * callback owns it (svc_redis: thread-local, freed at thread exit). */
    rds *(*redis)(void *ctx, ts_err *err);
    void *redis_ctx;
} proxy_config;

#endif
