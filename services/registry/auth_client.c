/* auth_client.c: see auth_client.h. */
#include "auth_client.h"

#include <pthread.h>

static authctx *g_ctx;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void _make(void)
{
    authctx_opts o = {
        .auth_url = reg_settings.auth_url,
        .timeout_ms = reg_settings.auth_timeout_ms,
        .cache_ttl_ms = reg_settings.context_cache_ttl_ms,
        .cache_entries = reg_settings.context_cache_entries,
        .metrics_prefix = "tessera_registry",
    };
    g_ctx = authctx_new(&o);
}

authctx *authc(void)
{
    pthread_once(&g_once, _make);
    return g_ctx;
}

bool authc_start(svc *s, ts_err *err)
{
    return authctx_start(authc(), s, err);
}

void authc_stop(void)
{
    authctx_stop(authc());
}
