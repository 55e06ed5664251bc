/* upstream.h: the internal services behind the gateway, as one typed table
 * (main.c fills it, gateway.h holds it): for each, the option <name>.url
 * (its default and help come from the table, so --help and the example file
 * list it), whether /readyz checks its /healthz (a check named <name>), and
 * the forwarded calls it did not answer, counted by proxy.c and exported as
 * tessera_gateway_upstream_failures_total{upstream="<name>"}. */
#ifndef GATEWAY_UPSTREAM_H
#define GATEWAY_UPSTREAM_H

#include "libcommon/httpc.h"
#include "libcommon/svc.h"

#include <stdatomic.h>

typedef enum upstream_id {
    UPSTREAM_AUTH,
    UPSTREAM_REGISTRY,
    UPSTREAM_VFOLDER,
    UPSTREAM_WSPROXY,
    UPSTREAM_COUNT,
} upstream_id;

typedef struct upstream {
    const char *name;        /* "auth": metric label and readiness check */
    const char *option;      /* "auth.url" */
    const char *service;     /* "tessera-auth": in messages and log lines */
    const char *default_url; /* "http://127.0.0.1:8091" */
    const char *help;        /* the option's */
    bool checked;            /* /readyz checks its /healthz */
    char *url;               /* the option's value */
    _Atomic uint64_t failures;
} upstream;

/* The option rows of n upstreams (one each, <option> as a URL string),
 * written to out[0..n-1]. */
void upstream_options(upstream *ups, size_t n, cfg_option *out);
/* The readiness checks of the checked ones, and the failures metric. */
void upstream_start(svc *s, upstream *ups, size_t n);
/* This thread's keep-alive client for internal calls (signed as the
 * gateway); its own time limit is UPSTREAM_TIMEOUT_MS. */
#define UPSTREAM_TIMEOUT_MS 2000
httpc *upstream_client(void);

#endif
