/* upstream.c: internal HTTP to the services behind the gateway. */
#include "upstream.h"

#include <pthread.h>
#include <stdlib.h>

#define UPSTREAM_TIMEOUT_MS 2000

static pthread_key_t client_key;
static pthread_once_t client_once = PTHREAD_ONCE_INIT;

static void client_free(void *c)
{
    httpc_free(c);
}

static void client_key_init(void)
{
    pthread_key_create(&client_key, client_free);
}

httpc *upstream_client(void)
{
    pthread_once(&client_once, client_key_init);
    httpc *c = pthread_getspecific(client_key);
    if (!c) {
        c = httpc_new_internal(UPSTREAM_TIMEOUT_MS);
        pthread_setspecific(client_key, c);
    }
    return c;
}

static bool check_upstream(svc *s, void *ctx, ts_err *err)
{
    (void)s;
    const upstream *u = ctx;
    char *url = ts_asprintf("%s/healthz", *u->base_url);
    httpc_resp r = {0};
    bool ok = httpc_request(upstream_client(), "GET", url, NULL, NULL, 0, NULL, &r, err);
    if (ok && r.status != 200) {
        ts_err_set(err, "GET %s answered %ld", url, r.status);
        ok = false;
    } else if (!ok) {
        ts_err_prefix(err, "GET %s", url);
    }
    httpc_resp_free(&r);
    free(url);
    return ok;
}

void upstream_add_checks(svc *s, upstream *ups, size_t n)
{
    for (size_t i = 0; i < n; i++)
        svc_add_check(s, ups[i].name, check_upstream, &ups[i]);
}
