/* housekeeping.c: see housekeeping.h. */
#include "housekeeping.h"

#include "agents.h"
#include "context.h"
#include "occupancy_sync.h"
#include "pending_timeout.h"
#include "idle_network.h"
#include "session_lifetime.h"
#include "reconcile.h"
#include "route_sync.h"
#include "session_enqueued.h"
#include "usage_store.h"

#include "libcommon/deps.h"
#include "libcommon/log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

static pthread_t thread, reconcile_thread;
static atomic_bool running;
static bool started;

/* Whether the registry hears agents now: heartbeats reach it over the bus and
 * are stored in PostgreSQL by the agent-events consumer. While either is
 * unreachable, or that consumer is paused, a silent agent cannot be told
 * from a deaf registry. */
static bool hearing(void)
{
    if (deps_is_down(DEP_POSTGRESQL) || kbus_paused(svc_bus(reg_service()), NULL) > 0) return false;
    ts_err err = {{0}};
    return kbus_ping(svc_bus(reg_service()), 1000, &err);
}

static void *loop(void *arg)
{
    (void)arg;
    int64_t start = ts_now_mono_ms();
    int64_t next_lost = start + reg_settings.agent_lost_timeout_ms;
    int64_t next_occ = start + reg_settings.reconcile_interval_ms;
    int64_t next_pub = start + 2000;
    int64_t next_pending = start + reg_settings.pending_check_interval_ms;
    int64_t next_prune = start + 60000;
    int64_t deaf_since = 0;
    while (atomic_load(&running)) {
        int64_t now = ts_now_mono_ms();
        if (now >= next_lost) {
            if (hearing()) {
                agents_check_lost();
                next_lost = now + reg_settings.lost_check_interval_ms;
            } else {
                /* Deaf: once hearing again, the heartbeats held on the bus
                 * meanwhile are applied before anyone is judged lost. */
                if (deaf_since == 0)
                    TLOG_WARN("lost-agent check held: the registry does not hear agents",
                              "until=\"the bus and PostgreSQL answer, then %lld ms\"",
                              (long long)reg_settings.agent_lost_timeout_ms);
                deaf_since = now;
                next_lost = now + reg_settings.agent_lost_timeout_ms;
            }
        }
        if (deaf_since && now - deaf_since > reg_settings.agent_lost_timeout_ms) {
            TLOG_INFO("lost-agent check resumes", "");
            deaf_since = 0;
        }
        if (now >= next_occ) {
            /* a failure is logged there; the next interval checks again */
            TS_IGNORE(occupancy_check());
            route_sync_pass();
            next_occ = now + reg_settings.reconcile_interval_ms;
        }
        if (now >= next_pub) {
            session_enqueued_republish();
            next_pub = now + 2000;
        }
        if (now >= next_pending) {
            int cancelled; /* logged one by one there */
            TS_IGNORE(pending_timeout_sweep(&cancelled));
            int ended; /* likewise */
            TS_IGNORE(session_lifetime_sweep(&ended));
            TS_IGNORE(idle_network_sweep(&ended));
            next_pending = now + reg_settings.pending_check_interval_ms;
        }
        if (now >= next_prune) {
            /* a full batch: more are due, go on soon; a failure is logged */
            next_prune = now + (usage_store_prune() >= 10000 ? 1000 : 60000);
        }
        usleep(100 * 1000);
    }
    return NULL;
}

/* The reconcile pass on a thread of its own: it waits on agents' HTTP
 * answers, which must not hold up the checks above. */
static void *reconcile_loop(void *arg)
{
    (void)arg;
    int64_t next = ts_now_mono_ms() + reg_settings.kernel_reconcile_interval_ms;
    while (atomic_load(&running)) {
        if (ts_now_mono_ms() >= next) {
            reconcile_pass();
            next = ts_now_mono_ms() + reg_settings.kernel_reconcile_interval_ms;
        }
        usleep(100 * 1000);
    }
    return NULL;
}

bool housekeeping_start(ts_err *err)
{
    atomic_store(&running, true);
    if (pthread_create(&thread, NULL, loop, NULL) != 0) {
        ts_err_set(err, "housekeeping thread: cannot start");
        return false;
    }
    if (reg_settings.kernel_reconcile_interval_ms > 0 &&
        pthread_create(&reconcile_thread, NULL, reconcile_loop, NULL) != 0) {
        atomic_store(&running, false);
        pthread_join(thread, NULL);
        ts_err_set(err, "reconcile thread: cannot start");
        return false;
    }
    started = true;
    return true;
}

void housekeeping_stop(void)
{
    if (!started) return;
    atomic_store(&running, false);
    pthread_join(thread, NULL);
    if (reg_settings.kernel_reconcile_interval_ms > 0) pthread_join(reconcile_thread, NULL);
    started = false;
}
