/* upstream.h: the internal services the gateway calls (auth, registry,
 * vfolder): their base URLs and readiness checks on them. */
#ifndef GATEWAY_UPSTREAM_H
#define GATEWAY_UPSTREAM_H

#include "libcommon/httpc.h"
#include "libcommon/svc.h"

typedef struct upstream {
    const char *name; /* "auth" */
    char **base_url;  /* config value: "http://127.0.0.1:8091" */
} upstream;

/* Adds one readiness check per upstream: its /healthz answers 200. */
void upstream_add_checks(svc *s, upstream *ups, size_t n);
/* This thread's keep-alive client for internal calls. */
httpc *upstream_client(void);

#endif
