/* app_routes.c: see app_routes.h. */
#include "app_routes.h"

#include "context.h"
#include "libcommon/httpc.h"
#include "libcommon/log.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define QUEUE_MAX 4096
#define CALL_TIMEOUT_MS 3000

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static char *g_queue[QUEUE_MAX];
static size_t g_head, g_len;
static bool g_started;

static void _revoke_now(httpc *c, const char *session_id)
{
    char *url = ts_asprintf("%s/v1/sessions/%s/routes", reg_settings.wsproxy_url, session_id);
    ts_err err = {{0}};
    long status = 0;
    json_t *answer = NULL;
    if (!httpc_json(c, "DELETE", url, NULL, NULL, &status, &answer, &err))
        TLOG_WARN("app routes not removed", "session=%s url=%s error=\"%s\"", session_id, url,
                  err.msg);
    else if (status != 200)
        TLOG_WARN("app routes not removed", "session=%s url=%s status=%ld", session_id, url,
                  status);
    else
        TLOG_DEBUG("app routes removed", "session=%s removed=%lld", session_id,
                   (long long)json_integer_value(json_object_get(answer, "removed")));
    json_decref(answer);
    free(url);
}

static void *_worker(void *arg)
{
    (void)arg;
    httpc *c = httpc_new_internal(CALL_TIMEOUT_MS);
    for (;;) {
        pthread_mutex_lock(&g_mu);
        while (g_len == 0)
            pthread_cond_wait(&g_cv, &g_mu);
        char *id = g_queue[g_head];
        g_head = (g_head + 1) % QUEUE_MAX;
        g_len--;
        pthread_mutex_unlock(&g_mu);
        _revoke_now(c, id);
        free(id);
    }
    return NULL;
}

void app_routes_revoke(const char *session_id)
{
    if (!reg_settings.wsproxy_url || !*reg_settings.wsproxy_url) return;
    pthread_mutex_lock(&g_mu);
    if (!g_started) {
        pthread_t t;
        if (pthread_create(&t, NULL, _worker, NULL) != 0) {
            pthread_mutex_unlock(&g_mu);
            TLOG_WARN("app routes not removed", "session=%s error=\"no worker thread\"",
                      session_id);
            return;
        }
        pthread_detach(t);
        g_started = true;
    }
    if (g_len == QUEUE_MAX) {
        pthread_mutex_unlock(&g_mu);
        TLOG_WARN("app routes not removed", "session=%s error=\"queue full\"", session_id);
        return;
    }
    g_queue[(g_head + g_len) % QUEUE_MAX] = ts_strdup(session_id);
    g_len++;
    pthread_cond_signal(&g_cv);
    pthread_mutex_unlock(&g_mu);
}
