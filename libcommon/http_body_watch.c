/* http_body_watch.c: see http_body_watch.h. The watched requests are a list
 * (bodies in flight are few); the thread scans it at each wake-up, which is
 * the earliest deadline, an add, or at most a second. */
#include "libcommon/http_body_watch.h"

#include "libcommon/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct http_body_watch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool stopping;
    int64_t timeout_us;
    http_body_entry head; /* sentinel of a circular list */
    void (*expire)(http_body_entry *e, void *ctx);
    void *ctx;
};

static void _unlink(http_body_entry *e)
{
    if (!e->next) return;
    e->prev->next = e->next;
    e->next->prev = e->prev;
    e->prev = e->next = NULL;
}

/* Expire what is due; the earliest deadline still ahead (or now + 1 s). */
static int64_t _sweep(http_body_watch *w, int64_t now)
{
    int64_t next = now + 1000000;
    http_body_entry *e = w->head.next;
    while (e != &w->head) {
        http_body_entry *n = e->next;
        if (e->deadline_us <= now) {
            _unlink(e);
            e->state = HTTP_BODY_EXPIRED;
            w->expire(e, w->ctx);
        } else if (e->deadline_us < next) {
            next = e->deadline_us;
        }
        e = n;
    }
    return next;
}

static void *_run(void *arg)
{
    http_body_watch *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stopping) {
        int64_t next = _sweep(w, ts_now_mono_us());
        /* the condition variable waits on CLOCK_MONOTONIC (see start) */
        struct timespec ts = {.tv_sec = (time_t)(next / 1000000),
                              .tv_nsec = (long)(next % 1000000) * 1000};
        int rc = pthread_cond_timedwait(&w->cv, &w->mu, &ts);
        if (rc != 0 && rc != ETIMEDOUT && rc != EINTR) break;
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

http_body_watch *http_body_watch_start(int64_t timeout_us,
                                       void (*expire)(http_body_entry *e, void *ctx), void *ctx,
                                       ts_err *err)
{
    http_body_watch *w = ts_calloc(1, sizeof(*w));
    w->timeout_us = timeout_us;
    w->expire = expire;
    w->ctx = ctx;
    w->head.prev = w->head.next = &w->head;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    int rc = pthread_create(&w->thread, NULL, _run, w);
    if (rc != 0) {
        ts_err_set(err, "http body watch: thread: %s", strerror(rc));
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return NULL;
    }
    return w;
}

void http_body_watch_stop(http_body_watch *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    bool running = !w->stopping;
    w->stopping = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    if (running) pthread_join(w->thread, NULL);
}

void http_body_watch_free(http_body_watch *w)
{
    if (!w) return;
    http_body_watch_stop(w);
    while (w->head.next != &w->head)
        _unlink(w->head.next);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

void http_body_watch_add(http_body_watch *w, http_body_entry *e, int fd, void *owner)
{
    pthread_mutex_lock(&w->mu);
    _unlink(e);
    e->fd = fd;
    e->owner = owner;
    e->state = HTTP_BODY_WATCHED;
    e->deadline_us = ts_now_mono_us() + w->timeout_us;
    e->prev = w->head.prev;
    e->next = &w->head;
    w->head.prev->next = e;
    w->head.prev = e;
    /* the thread may sleep past this deadline (up to a second): only a new
     * earliest one matters, but waking it is cheap */
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void http_body_watch_touch(http_body_watch *w, http_body_entry *e)
{
    pthread_mutex_lock(&w->mu);
    if (e->state == HTTP_BODY_WATCHED) e->deadline_us = ts_now_mono_us() + w->timeout_us;
    pthread_mutex_unlock(&w->mu);
}

bool http_body_watch_claim(http_body_watch *w, http_body_entry *e)
{
    pthread_mutex_lock(&w->mu);
    bool ours = e->state != HTTP_BODY_EXPIRED;
    if (e->state == HTTP_BODY_WATCHED) {
        _unlink(e);
        e->state = HTTP_BODY_CLAIMED;
    }
    pthread_mutex_unlock(&w->mu);
    return ours;
}

void http_body_watch_remove(http_body_watch *w, http_body_entry *e)
{
    pthread_mutex_lock(&w->mu);
    _unlink(e);
    pthread_mutex_unlock(&w->mu);
}

http_body_state http_body_watch_state(http_body_watch *w, const http_body_entry *e)
{
    pthread_mutex_lock(&w->mu);
    http_body_state st = e->state;
    pthread_mutex_unlock(&w->mu);
    return st;
}
