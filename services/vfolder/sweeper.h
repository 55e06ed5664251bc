/* sweeper.h: a background thread that runs one job now and then (main.c:
 * the purge of old trash; files_routes.c: the sweep of expired uploads),
 * stopped at shutdown. The job runs on the sweeper's thread, never two at a
 * time; stopping waits for a run in progress. */
#ifndef VFOLDER_SWEEPER_H
#define VFOLDER_SWEEPER_H

#include "libcommon/svc.h"

#include <pthread.h>
#include <stdatomic.h>

typedef struct vf_sweeper {
    const char *name; /* "trash", "upload": in the start error */
    void (*job)(svc *s);
    svc *s;
    int64_t first_ms;           /* the first run, this long after the start */
    const int64_t *interval_ms; /* then every *interval_ms (read before each wait: the
                                 * option may be reloaded; <= 0: a minute) */
    pthread_t thread;
    atomic_bool stop;
    bool started;
} vf_sweeper;

/* Start w's thread (w filled up to interval_ms; it must outlive the thread). */
bool vf_sweeper_start(vf_sweeper *w, svc *s, ts_err *err) TS_MUST_CHECK;
/* Stop it and wait for it (nothing when it was not started). */
void vf_sweeper_stop(vf_sweeper *w);

#endif
