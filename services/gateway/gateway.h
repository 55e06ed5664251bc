/* gateway.h: what the gateway's modules share: the configuration values
 * (main.c's option table points into them), the table of upstream services
 * and the credential cache. One instance per process, made in main.c and
 * handed to the modules as they are wired (the routes' context). */
#ifndef GATEWAY_GATEWAY_H
#define GATEWAY_GATEWAY_H

#include "credentials.h"
#include "upstream.h"

#include "libcommon/svc.h"

typedef struct gateway {
    svc *svc;
    upstream up[UPSTREAM_COUNT]; /* the services behind the gateway (main.c's table) */
    int64_t cache_ttl_ms;        /* auth.cache_ttl */
    int64_t negative_ttl_ms;     /* auth.negative_cache_ttl */
    int64_t auth_timeout_ms;     /* auth.timeout: forwarded calls */
    int64_t audit_batch_records; /* audit.batch_records */
    int64_t audit_batch_wait_ms; /* audit.batch_wait */
    credentials *creds;
    /* The web console and its browser sessions (console.h, websession.h). */
    char *console_dir;          /* gateway.console_dir ("": beside the binary) */
    int64_t web_idle_ms;        /* gateway.web_session_idle */
    int64_t web_max_age_ms;     /* gateway.web_session_max_age */
    char *web_origins;          /* gateway.web_allowed_origins */
    char *web_cookie_secure;    /* gateway.web_cookie_secure: auto|always|never */
    char *cors_origins;         /* gateway.cors_origins (cors.h) */
    char *token_login_name;     /* gateway.token_login_name (server_login.h) */
    int64_t max_event_streams;  /* gateway.max_event_streams (events.h) */
    int64_t event_keepalive_ms; /* gateway.event_keepalive */
    int64_t max_streams;        /* gateway.max_streams (streams.h) */
    int64_t status_timeout_ms;  /* gateway.status_timeout (status.h) */
    char *status_targets;       /* gateway.status_targets */
} gateway;

#endif
