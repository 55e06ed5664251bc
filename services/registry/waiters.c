/* waiters.c: one mutex, one condition variable, a list of waiters (see
 * waiters.h). A handful of create calls wait at once (bounded by
 * registry.max_waiting_creates), so a list is enough. The stream that
 * carries other instances' changes is followed by one thread. */
#include "waiters.h"

#include "context.h"
#include "db_common.h"
#include "libcommon/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FEED_STREAM "registry:session-status"
#define FEED_MAXLEN "10000"
#define FEED_BLOCK_MS "1000"
#define FEED_BATCH "256"

struct waiter {
    char session_id[TS_UUID_STRLEN];
    char status[16];
    bool done;
    waiter *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static waiter *head;
static int count;

static void init_cv(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&cv, &a);
    pthread_condattr_destroy(&a);
}

static bool wanted(const char *status)
{
    return strcmp(status, ST_RUNNING) == 0 || reg_status_final(status);
}

waiter *waiters_add(const char *session_id, int max_waiting)
{
    pthread_once(&once, init_cv);
    pthread_mutex_lock(&mu);
    if (count >= max_waiting) {
        pthread_mutex_unlock(&mu);
        return NULL;
    }
    waiter *w = ts_calloc(1, sizeof(*w));
    ts_strlcpy(w->session_id, session_id, sizeof(w->session_id));
    w->next = head;
    head = w;
    count++;
    pthread_mutex_unlock(&mu);
    return w;
}

/* The session's status in PostgreSQL (the safety net); "" when unknown. */
static void read_status(const char *session_id, char *status, size_t size)
{
    status[0] = '\0';
    ts_err err = {{0}};
    PGconn *conn = reg_pg_get(&err);
    const char *p[] = {session_id};
    PGresult *r = conn ? reg_exec(conn, "SELECT status FROM registry.sessions WHERE id = $1::uuid",
                                  1, p, &err)
                       : NULL;
    reg_pg_put(conn);
    if (r && PQntuples(r) == 1) ts_strlcpy(status, PQgetvalue(r, 0, 0), size);
    if (r) PQclear(r);
}

static void notify_local(const char *session_id, const char *status)
{
    pthread_once(&once, init_cv);
    bool wake = false;
    pthread_mutex_lock(&mu);
    for (waiter *w = head; w; w = w->next) {
        if (strcmp(w->session_id, session_id) != 0) continue;
        ts_strlcpy(w->status, status, sizeof(w->status));
        if (wanted(status)) w->done = true;
        wake = true;
    }
    if (wake) pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

void waiters_wait(waiter *w, int64_t deadline_ms, char *status, size_t size)
{
    pthread_mutex_lock(&mu);
    int64_t recheck = ts_now_mono_ms() + WAITERS_RECHECK_MS;
    while (!w->done) {
        int64_t now = ts_now_mono_ms();
        if (now >= deadline_ms) break;
        if (now >= recheck) {
            pthread_mutex_unlock(&mu);
            char st[16];
            read_status(w->session_id, st, sizeof(st));
            if (st[0]) notify_local(w->session_id, st);
            pthread_mutex_lock(&mu);
            recheck = ts_now_mono_ms() + WAITERS_RECHECK_MS;
            continue;
        }
        int64_t until = recheck < deadline_ms ? recheck : deadline_ms;
        int64_t left = until - now;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t ns = ts.tv_nsec + (left % 1000) * 1000000;
        ts.tv_sec += left / 1000 + ns / 1000000000;
        ts.tv_nsec = ns % 1000000000;
        (void)pthread_cond_timedwait(&cv, &mu, &ts); /* the loop looks at the clock */
    }
    ts_strlcpy(status, w->status, size);
    for (waiter **p = &head; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    count--;
    pthread_mutex_unlock(&mu);
    free(w);
}

/* ---- the stream ------------------------------------------------------------------------------ */

static char *feed_key(void)
{
    return ts_asprintf("%s%s", reg_settings.redis_prefix ? reg_settings.redis_prefix : "",
                       FEED_STREAM);
}

void waiters_notify(const char *session_id, const char *status)
{
    notify_local(session_id, status);
    if (!wanted(status)) return;
    ts_err err = {{0}};
    rds *r = reg_redis(&err);
    char *key = feed_key();
    const char *argv[] = {"XADD", key,       "MAXLEN",   "~",      FEED_MAXLEN,
                          "*",    "session", session_id, "status", status};
    redisReply *rep = r ? rds_command(r, 10, argv, NULL, &err) : NULL;
    if (!rep || rep->type == REDIS_REPLY_ERROR)
        TLOG_WARN("status change not shared with the other instances (their waiters read "
                  "PostgreSQL)",
                  "session=%s status=%s error=\"%s\"", session_id, status,
                  rep ? rep->str : err.msg);
    if (rep) freeReplyObject(rep);
    free(key);
}

int waiters_count(void)
{
    pthread_mutex_lock(&mu);
    int n = count;
    pthread_mutex_unlock(&mu);
    return n;
}

static pthread_t feed_thread;
static atomic_bool feed_running;

/* The stream's last id now ("0-0" when it is empty or missing). */
static bool feed_tail(rds *r, const char *key, char *last, size_t size, ts_err *err)
{
    const char *argv[] = {"XREVRANGE", key, "+", "-", "COUNT", "1"};
    redisReply *rep = rds_command(r, 6, argv, NULL, err);
    if (!rep) return false;
    ts_strlcpy(last, "0-0", size);
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 1 &&
        rep->element[0]->type == REDIS_REPLY_ARRAY && rep->element[0]->elements == 2 &&
        rep->element[0]->element[0]->type == REDIS_REPLY_STRING)
        ts_strlcpy(last, rep->element[0]->element[0]->str, size);
    bool ok = rep->type != REDIS_REPLY_ERROR;
    if (!ok) ts_err_set(err, "XREVRANGE %s: %s", key, rep->str);
    freeReplyObject(rep);
    return ok;
}

static const char *entry_field(const redisReply *f, const char *name)
{
    for (size_t k = 0; f && f->type == REDIS_REPLY_ARRAY && k + 1 < f->elements; k += 2)
        if (f->element[k]->type == REDIS_REPLY_STRING && strcmp(f->element[k]->str, name) == 0 &&
            f->element[k + 1]->type == REDIS_REPLY_STRING)
            return f->element[k + 1]->str;
    return NULL;
}

/* XREAD BLOCK once: each entry to the local waiters; last advanced. */
static bool feed_read(rds *r, const char *key, char *last, size_t size, ts_err *err)
{
    const char *argv[] = {"XREAD",       "COUNT",   FEED_BATCH, "BLOCK",
                          FEED_BLOCK_MS, "STREAMS", key,        last};
    redisReply *rep = rds_command(r, 8, argv, NULL, err);
    if (!rep) return false;
    if (rep->type == REDIS_REPLY_ERROR) {
        ts_err_set(err, "XREAD %s: %s", key, rep->str);
        freeReplyObject(rep);
        return false;
    }
    /* [[key, [[id, [field, value, ...]], ...]]], or nil after BLOCK */
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 1 &&
        rep->element[0]->type == REDIS_REPLY_ARRAY && rep->element[0]->elements == 2) {
        const redisReply *entries = rep->element[0]->element[1];
        for (size_t i = 0; entries->type == REDIS_REPLY_ARRAY && i < entries->elements; i++) {
            const redisReply *e = entries->element[i];
            if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
                e->element[0]->type != REDIS_REPLY_STRING)
                continue;
            ts_strlcpy(last, e->element[0]->str, size);
            const char *sid = entry_field(e->element[1], "session");
            const char *st = entry_field(e->element[1], "status");
            if (sid && st) notify_local(sid, st);
        }
    }
    freeReplyObject(rep);
    return true;
}

static void *feed_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "reg-waiters");
    char *key = feed_key();
    char last[64] = "";
    bool failing = false;
    while (atomic_load(&feed_running)) {
        ts_err err = {{0}};
        rds *r = reg_redis(&err);
        bool ok = r && (last[0] || feed_tail(r, key, last, sizeof(last), &err)) &&
                  feed_read(r, key, last, sizeof(last), &err);
        if (!ok) {
            if (!failing)
                TLOG_WARN("status stream not followed (waiters read PostgreSQL meanwhile)",
                          "error=\"%s\"", err.msg);
            failing = true;
            usleep(500 * 1000);
        } else if (failing) {
            TLOG_INFO("status stream followed again", "");
            failing = false;
        }
    }
    free(key);
    return NULL;
}

bool waiters_feed_start(ts_err *err)
{
    atomic_store(&feed_running, true);
    if (pthread_create(&feed_thread, NULL, feed_main, NULL) != 0) {
        atomic_store(&feed_running, false);
        ts_err_set(err, "waiters: cannot start the status stream's thread");
        return false;
    }
    return true;
}

void waiters_feed_stop(void)
{
    if (!atomic_exchange(&feed_running, false)) return;
    pthread_join(feed_thread, NULL);
}
