/* worker.c: what a worker offers the code running its connections (worker.h). */
#include "services/wsproxy/worker.h"

#include "libcommon/log.h"

#include <string.h>

rds *worker_redis(worker *w)
{
    if (w->rd) return w->rd;
    ts_err err;
    w->rd = w->cfg->redis(w->cfg->redis_ctx, &err);
    if (!w->rd) TLOG_WARN("redis unavailable", "worker=%d error=\"%s\"", w->id, err.msg);
    return w->rd;
}

void worker_touch(worker *w, const char *session_id)
{
    uint64_t h = ts_fnv1a(TS_FNV_OFFSET, session_id, strlen(session_id));
    size_t slot = h % WP_TOUCH_SLOTS;
    int64_t sec = w->now_ms / 1000;
    if (w->touch_key[slot] == h && w->touch_sec[slot] == sec) return;
    w->touch_key[slot] = h;
    w->touch_sec[slot] = sec;
    pthread_mutex_lock(&w->mu);
    bool dup = false;
    for (int i = 0; i < w->n_touched && !dup; i++)
        dup = strcmp(w->touched[i], session_id) == 0;
    if (!dup && w->n_touched < 4096) {
        if (w->n_touched == w->cap_touched) {
            w->cap_touched = w->cap_touched ? w->cap_touched * 2 : 16;
            w->touched = ts_realloc(w->touched, (size_t)w->cap_touched * sizeof(*w->touched));
        }
        ts_strlcpy(w->touched[w->n_touched++], session_id, ROUTE_ID_MAX + 1);
    }
    pthread_mutex_unlock(&w->mu);
}

void worker_log_route(worker *w, const route *rt)
{
    tlog_ctx_session(rt->session_id);
    tlog_ctx_entity("route", rt->hash);
    w->log_ctx = true;
}

void worker_log_end(worker *w)
{
    if (!w->log_ctx) return;
    tlog_ctx_clear();
    w->log_ctx = false;
}
