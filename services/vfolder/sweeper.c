/* sweeper.c: a thread running a job periodically (see sweeper.h). */
#include "sweeper.h"

#include <time.h>

static void *_run(void *arg)
{
    vf_sweeper *w = arg;
    int64_t next = ts_now_mono_ms() + w->first_ms;
    while (!atomic_load(&w->stop)) {
        if (ts_now_mono_ms() >= next) {
            w->job(w->s);
            int64_t every = *w->interval_ms;
            next = ts_now_mono_ms() + (every > 0 ? every : 60000);
        }
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

bool vf_sweeper_start(vf_sweeper *w, svc *s, ts_err *err)
{
    w->s = s;
    atomic_store(&w->stop, false);
    if (pthread_create(&w->thread, NULL, _run, w) != 0) {
        ts_err_set(err, "could not start the %s sweeper", w->name);
        return false;
    }
    w->started = true;
    return true;
}

void vf_sweeper_stop(vf_sweeper *w)
{
    atomic_store(&w->stop, true);
    if (w->started) pthread_join(w->thread, NULL);
    w->started = false;
}
