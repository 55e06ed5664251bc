/* upstream.c: the table of internal services behind the gateway (upstream.h). */
#include "upstream.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

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

void upstream_options(upstream *ups, size_t n, cfg_option *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (cfg_option){.name = ups[i].option,
                              .type = CFG_STRING,
                              .dst = &ups[i].url,
                              .def = ups[i].default_url,
                              .help = ups[i].help};
}

static bool check_upstream(svc *s, void *ctx, ts_err *err)
{
    (void)s;
    const upstream *u = ctx;
    char *url = ts_asprintf("%s/healthz", u->url);
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

typedef struct table {
    upstream *ups;
    size_t n;
} table;

static void collect(FILE *out, void *ctx)
{
    const table *t = ctx;
    metrics_family(out, "tessera_gateway_upstream_failures_total", "counter",
                   "Forwarded requests an upstream service did not answer (503 to the client).");
    for (size_t i = 0; i < t->n; i++) {
        char labels[64];
        snprintf(labels, sizeof(labels), "upstream=\"%s\"", t->ups[i].name);
        metrics_sample_u64(out, "tessera_gateway_upstream_failures_total", labels,
                           atomic_load(&t->ups[i].failures));
    }
}

void upstream_start(svc *s, upstream *ups, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ups[i].checked) svc_add_check(s, ups[i].name, check_upstream, &ups[i]);
    table *t = ts_calloc(1, sizeof(*t)); /* lives as long as the process */
    *t = (table){ups, n};
    metrics_add(svc_metrics(s), collect, t);
}
