/* watch.c: revocations in, last access out (watch.h). */
#include "services/wsproxy/watch.h"

#include "libcommon/log.h"
#include "services/wsproxy/routes.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_BATCH 256

struct watch {
    proxy *px;
    rds *(*redis)(void *ctx, ts_err *err);
    void *redis_ctx;
    int64_t session_ttl_ms;
    int block_ms;
    pthread_t thread;
    atomic_bool stop;
};

struct touch_ctx {
    rds *rd;
    int64_t now_ms, ttl_ms;
    char seen[MAX_BATCH][ROUTE_ID_MAX + 1];
    int n_seen;
};

static void touch_one(void *vctx, const char *sid)
{
    struct touch_ctx *t = vctx;
    for (int i = 0; i < t->n_seen; i++)
        if (strcmp(t->seen[i], sid) == 0) return; /* several workers, one write */
    if (t->n_seen < MAX_BATCH) ts_strlcpy(t->seen[t->n_seen++], sid, ROUTE_ID_MAX + 1);
    ts_err err;
    if (t->rd && !routes_touch(t->rd, sid, t->now_ms, t->ttl_ms, &err)) {
        tlog_ctx_session(sid);
        TLOG_WARN("last access not recorded", "error=\"%s\"", err.msg);
        tlog_ctx_session(NULL);
    }
}

static void *watch_main(void *arg)
{
    watch *w = arg;
    pthread_setname_np(pthread_self(), "wsproxy-watch");
    char last_id[64] = "";
    int64_t last_touch = ts_now_mono_ms();
    static char ids[MAX_BATCH][ROUTE_ID_MAX + 1];
    while (!atomic_load(&w->stop)) {
        ts_err err;
        rds *rd = w->redis(w->redis_ctx, &err);
        if (!rd) {
            TLOG_WARN("revocation watch: redis unavailable", "error=\"%s\"", err.msg);
            usleep(500 * 1000);
            continue;
        }
        if (!last_id[0] && !routes_revocations_tail(rd, last_id, &err)) {
            TLOG_WARN("revocation watch failed", "error=\"%s\"", err.msg);
            last_id[0] = '\0';
            usleep(500 * 1000);
            continue;
        }
        int n;
        if (!routes_revocations_wait(rd, last_id, w->block_ms, ids, MAX_BATCH, &n, &err)) {
            TLOG_WARN("revocation watch failed", "error=\"%s\"", err.msg);
            usleep(200 * 1000);
        }
        for (int i = 0; i < n; i++)
            proxy_revoke(w->px, ids[i]);
        int64_t now = ts_now_mono_ms();
        if (now - last_touch >= 1000) {
            last_touch = now;
            struct touch_ctx *t = ts_calloc(1, sizeof(*t));
            t->rd = rd;
            t->now_ms = ts_now_wall_ms();
            t->ttl_ms = w->session_ttl_ms;
            proxy_take_touched(w->px, touch_one, t);
            free(t);
        }
    }
    return NULL;
}

watch *watch_start(proxy *p, rds *(*redis)(void *ctx, ts_err *err), void *redis_ctx,
                   int64_t session_ttl_ms, int block_ms)
{
    watch *w = ts_calloc(1, sizeof(*w));
    w->px = p;
    w->redis = redis;
    w->redis_ctx = redis_ctx;
    w->session_ttl_ms = session_ttl_ms;
    w->block_ms = block_ms;
    if (pthread_create(&w->thread, NULL, watch_main, w) != 0)
        ts_panic("wsproxy: cannot start the watcher");
    return w;
}

void watch_stop(watch *w)
{
    if (!w) return;
    atomic_store(&w->stop, true);
    pthread_join(w->thread, NULL);
    free(w);
}
