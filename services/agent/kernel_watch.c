/* kernel_watch.c: the watcher of the kernel table (kernel_watch.h). */
#include "services/agent/kernel_watch.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libcommon/log.h"

#define WATCH_INTERVAL_MS 500
#define TOMBSTONE_TTL_MS (3600 * 1000LL)

static bool _to_look_at(const krec *k)
{
    return strcmp(k->status, "running") == 0 ||
           (strcmp(k->status, "exited") == 0 && !k->exit_reported);
}

/* Ids collected under the lock. */
typedef struct id_list {
    char (*ids)[80];
    int n, cap;
} id_list;

static void _id_add(id_list *l, const char *id)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->ids = ts_realloc(l->ids, sizeof(*l->ids) * (size_t)l->cap);
    }
    ts_strlcpy(l->ids[l->n++], id, sizeof(l->ids[0]));
}

/* Under the lock: drop old tombstones (their ids into gone: a disk a
 * restart kept for them, with no next generation, is removed), destroy
 * exited kernels kept too long, and copy the ids of the kernels to ask the
 * runtime about into look (records may go away meanwhile). */
static void _sweep(kernels *ks, id_list *look, id_list *gone)
{
    int64_t now = ts_now_wall_ms();
    for (krec **pp = &ks->all; *pp;) {
        krec *k = *pp;
        bool idle = !k->busy && !k->in_ready && !k->head;
        if (idle && strcmp(k->status, "terminated") == 0 &&
            now - k->terminated_at_ms > TOMBSTONE_TTL_MS) {
            *pp = k->next;
            _id_add(gone, k->id);
            krec_unlink_meta(ks->meta_dir, k->id);
            krec_free(k);
            continue;
        }
        if (idle && strcmp(k->status, "exited") == 0 && !k->destroy_queued &&
            ks->o.exited_retention_ms > 0 && now - k->exited_at_ms > ks->o.exited_retention_ms) {
            TLOG_INFO("exited kernel not destroyed in time: destroying it", "kernel=%s", k->id);
            ktab_enqueue(ks, k, KTASK_DESTROY, "exited", ks->o.destroy_grace_ms);
        }
        if (idle && _to_look_at(k)) _id_add(look, k->id);
        pp = &k->next;
    }
}

/* The runtime says the kernel id ended (exited or gone). */
static void _ended(kernels *ks, const char *id, const kernel_status *st)
{
    pthread_mutex_lock(&ks->mu);
    krec *k = ktab_find(ks, id);
    bool report = k && !k->busy && !k->head && _to_look_at(k);
    if (report && st->state == KERNEL_EXITED) {
        if (strcmp(k->status, "running") == 0) k->exited_at_ms = ts_now_wall_ms();
        ts_strlcpy(k->status, "exited", sizeof(k->status));
        k->exit_code = st->exit_code;
        ts_strlcpy(k->reason, st->reason, sizeof(k->reason));
        k->exit_reported = true;
        ktab_persist(ks, k);
    } else if (report) { /* the container vanished under us */
        ktab_enqueue(ks, k, KTASK_REPORT_LOST, "the container disappeared", 0);
        report = false;
    }
    kev_ctx c = report ? ktab_kev(ks, k) : (kev_ctx){0};
    pthread_mutex_unlock(&ks->mu);
    if (report) {
        tlog_ctx_kernel(c.kernel_id);
        tlog_ctx_session(c.session_id);
        TLOG_INFO("kernel exited", "exit_code=%d reason=\"%s\"", st->exit_code, st->reason);
        kev_exited(&c, st->exit_code, st->reason);
        tlog_ctx_clear();
    }
}

static void _watch_once(kernels *ks)
{
    id_list look = {0}, gone = {0};
    pthread_mutex_lock(&ks->mu);
    _sweep(ks, &look, &gone);
    pthread_mutex_unlock(&ks->mu);
    for (int i = 0; i < gone.n; i++)
        runtime_discard_kept(ks->o.rt, gone.ids[i]);
    for (int i = 0; i < look.n; i++) {
        kernel_status st;
        ts_err err = {{0}};
        if (!runtime_status(ks->o.rt, look.ids[i], &st, &err)) continue;
        if (st.state == KERNEL_EXITED || st.state == KERNEL_GONE) _ended(ks, look.ids[i], &st);
    }
    free(look.ids);
    free(gone.ids);
}

static void *_watcher(void *arg)
{
    kernels *ks = arg;
    pthread_mutex_lock(&ks->mu);
    while (!ks->stop) {
        pthread_mutex_unlock(&ks->mu);
        _watch_once(ks);
        pthread_mutex_lock(&ks->mu);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += WATCH_INTERVAL_MS * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        while (!ks->stop && pthread_cond_timedwait(&ks->cv, &ks->mu, &ts) == 0) {
        }
    }
    pthread_mutex_unlock(&ks->mu);
    return NULL;
}

bool kernel_watch_start(kernels *ks, ts_err *err)
{
    int rc = pthread_create(&ks->watcher, NULL, _watcher, ks);
    if (rc != 0) {
        ts_err_set(err, "watcher thread: %s", strerror(rc));
        return false;
    }
    ks->watching = true;
    return true;
}

void kernel_watch_join(kernels *ks)
{
    if (!ks->watching) return;
    pthread_join(ks->watcher, NULL);
    ks->watching = false;
}
