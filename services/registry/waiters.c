/* waiters.c: one mutex, one condition variable, a list of waiters (see
 * waiters.h). A handful of create calls wait at once (bounded by
 * registry.max_waiting_creates), so a list is enough. */
#include "waiters.h"

#include "db_common.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

void waiters_wait(waiter *w, int64_t deadline_ms, char *status, size_t size)
{
    pthread_mutex_lock(&mu);
    while (!w->done) {
        int64_t left = deadline_ms - ts_now_mono_ms();
        if (left <= 0) break;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t ns = ts.tv_nsec + (left % 1000) * 1000000;
        ts.tv_sec += left / 1000 + ns / 1000000000;
        ts.tv_nsec = ns % 1000000000;
        int rc = pthread_cond_timedwait(&cv, &mu, &ts);
        if (rc == ETIMEDOUT && ts_now_mono_ms() >= deadline_ms) break;
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

void waiters_notify(const char *session_id, const char *status)
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

int waiters_count(void)
{
    pthread_mutex_lock(&mu);
    int n = count;
    pthread_mutex_unlock(&mu);
    return n;
}
