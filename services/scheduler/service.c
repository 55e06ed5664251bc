/* service.c: the wiring: the scheduling thread (inbox, coalesced passes, the
 * sweep), start and stop, /metrics and readiness (service.h). */
#include "services/scheduler/service.h"

#include "libcommon/log.h"
#include "services/scheduler/agents.h"
#include "services/scheduler/consumers.h"
#include "services/scheduler/groups.h"
#include "services/scheduler/ownership.h"
#include "services/scheduler/recovery.h"
#include "services/scheduler/sessions.h"
#include "services/scheduler/shared_limits.h"
#include "services/scheduler/state.h"
#include "services/scheduler/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void free_info(void *p)
{
    free(p);
}

/* One inbox event, with the session or agent it is about in the log context. */
static void apply(sched_svc *x, sched_ev *ev)
{
    if (ev->kind == EV_AGENT_UP || ev->kind == EV_AGENT_DOWN || ev->kind == EV_AGENT_SCHEDULABLE)
        sched_log_agent(ev->agent.id);
    else
        sched_log_session(ev->session_id);
    switch (ev->kind) {
    case EV_ENQUEUED:
        sched_on_enqueued(x, ev->enq, ev->at_us);
        ev->enq = NULL; /* taken */
        break;
    case EV_ENDED:
        sched_on_ended(x, ev->session_id, ev->reason);
        break;
    case EV_AGENT_UP:
        sched_on_agent_up(x, &ev->agent);
        break;
    case EV_AGENT_DOWN:
        sched_on_agent_down(x, ev->agent.id, ev->reason);
        break;
    case EV_AGENT_SCHEDULABLE:
        sched_on_agent_drain(x, ev->agent.id, !ev->schedulable, ev->reason);
        break;
    }
    tlog_ctx_clear();
}

static void sweep(sched_svc *x, int64_t now)
{
    atomic_fetch_add(&x->st.sweeps, 1);
    sched_recovery_check_loss(x);
    if (x->redis_lost) return;
    sched_ownership_check(x, now);
    if (now >= x->next_resync_ms) {
        x->next_resync_ms = now + sched_cfg.resync_interval_ms;
        sched_resync_all(x);
        sched_limits_resync(x);
    }
    /* starts_at, aging and capacity freed elsewhere: every group gets a pass */
    sched_mark_all_dirty(x);
    sched_store_unpersist_flush(x); /* leftovers of a flush that timed out */
}

static bool setup(sched_svc *x, ts_err *err)
{
    x->r = svc_redis(x->s, err);
    if (!x->r) return false;
    x->v = resv_new(x->r, sched_cfg.key_prefix);
    x->e = sched_engine_new();
    x->recs = strmap_new();
    x->agents = strmap_new();
    x->dirty = strmap_new();
    x->ext_accounts = strmap_new();
    x->loading = true;
    bool ok = sched_recovery_load(x, err);
    x->loading = false;
    return ok;
}

static void *thread_main(void *arg)
{
    sched_svc *x = arg;
    ts_err err = {{0}};
    bool ok = setup(x, &err);
    pthread_mutex_lock(&x->mu);
    x->loaded = true;
    x->load_ok = ok;
    x->load_err = err;
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
    if (!ok) return NULL;

    int64_t now = ts_now_mono_ms();
    x->next_sweep_ms = now + sched_cfg.sweep_interval_ms;
    x->next_resync_ms = now + sched_cfg.resync_interval_ms;
    for (;;) {
        pthread_mutex_lock(&x->mu);
        while (!x->stop && !x->head && strmap_len(x->dirty) == 0 &&
               ts_now_mono_ms() < x->next_sweep_ms) {
            struct timespec ts = ts_realtime_in_ms(x->next_sweep_ms - ts_now_mono_ms());
            pthread_cond_timedwait(&x->cv, &x->mu, &ts);
        }
        if (x->stop) {
            pthread_mutex_unlock(&x->mu);
            break;
        }
        sched_ev *list = x->head;
        x->head = x->tail = NULL;
        pthread_mutex_unlock(&x->mu);

        while (list) {
            sched_ev *next = list->next;
            apply(x, list);
            sched_ev_free(list);
            list = next;
        }
        now = ts_now_mono_ms();
        if (now >= x->next_sweep_ms) {
            x->next_sweep_ms = now + sched_cfg.sweep_interval_ms;
            sweep(x, now);
        }
        sched_run_passes(x);
    }
    sched_store_unpersist_flush(x); /* this thread's Redis connection goes with it */
    return NULL;
}

/* ---- metrics and readiness ------------------------------------------------------------------- */

static void collect(FILE *out, void *ctx)
{
    sched_svc *x = ctx;
    sched_stats *st = &x->st;
    struct {
        const char *name, *type, *help;
        double v;
    } rows[] = {
        {"tessera_scheduler_enqueued_total", "counter", "Sessions queued.",
         (double)atomic_load(&st->enqueued)},
        {"tessera_scheduler_duplicates_total", "counter",
         "SessionEnqueued events ignored as replays (queued, holding slots or ended).",
         (double)atomic_load(&st->duplicates)},
        {"tessera_scheduler_scheduled_total", "counter", "Sessions scheduled (reserved in Redis).",
         (double)atomic_load(&st->scheduled)},
        {"tessera_scheduler_unschedulable_published_total", "counter",
         "SessionUnschedulable events published (the reason changed).",
         (double)atomic_load(&st->unschedulable_published)},
        {"tessera_scheduler_reservations_refused_total", "counter",
         "Placements Redis refused (another instance took the room first).",
         (double)atomic_load(&st->refused)},
        {"tessera_scheduler_sessions_ended_total", "counter",
         "SessionCancelled, SessionTerminated and SessionFailed events handled.",
         (double)atomic_load(&st->ended)},
        {"tessera_scheduler_kernels_released_total", "counter",
         "Kernels whose slots this instance released in Redis.",
         (double)atomic_load(&st->released)},
        {"tessera_scheduler_passes_total", "counter", "Scheduling passes run.",
         (double)atomic_load(&st->passes)},
        {"tessera_scheduler_pass_seconds_total", "counter", "Time spent in scheduling passes.",
         (double)atomic_load(&st->pass_us_sum) / 1e6},
        {"tessera_scheduler_sweeps_total", "counter", "Periodic sweeps run.",
         (double)atomic_load(&st->sweeps)},
        {"tessera_scheduler_agent_resyncs_total", "counter",
         "Agent occupancies corrected from Redis.", (double)atomic_load(&st->resyncs)},
        {"tessera_scheduler_redis_losses_total", "counter",
         "Times Redis was found without the scheduler's data.",
         (double)atomic_load(&st->redis_losses)},
        {"tessera_scheduler_rebuilds_total", "counter",
         "Occupancy rebuilds this instance did itself (scheduler.rebuild_after).",
         (double)atomic_load(&st->rebuilds)},
        {"tessera_scheduler_agent_events_total", "counter", "tessera.agent.v1 events handled.",
         (double)atomic_load(&st->agents_events)},
        {"tessera_scheduler_handed_over_total", "counter",
         "Queued sessions left to another instance (their partition went there).",
         (double)atomic_load(&st->handed_over)},
        {"tessera_scheduler_taken_over_total", "counter",
         "Pending sessions taken from Redis: after a start-up, or from another instance.",
         (double)atomic_load(&st->taken_over)},
        {"tessera_scheduler_queue_latency_seconds_total", "counter",
         "Sum over scheduled sessions of the time from the event's arrival to the reservation.",
         (double)atomic_load(&st->latency_us_sum) / 1e6},
        {"tessera_scheduler_queue_latency_count_total", "counter",
         "Sessions counted in tessera_scheduler_queue_latency_seconds_total.",
         (double)atomic_load(&st->latency_count)},
        {"tessera_scheduler_pending_sessions", "gauge", "Sessions in this instance's queues.",
         (double)atomic_load(&st->pending)},
        {"tessera_scheduler_held_sessions", "gauge",
         "Sessions holding slots that this instance knows.",
         (double)atomic_load(&st->held_sessions)},
        {"tessera_scheduler_agents", "gauge", "Agents in this instance's model.",
         (double)atomic_load(&st->agents)},
        {"tessera_scheduler_sessions_partitions_assigned", "gauge",
         "1 when the tessera.session.v1 consumer has partitions of its group.",
         kbus_consumer_assigned(x->c_sessions) ? 1 : 0},
        {"tessera_scheduler_sessions_partitions", "gauge",
         "Partitions of tessera.session.v1 this instance holds (its pending sessions' share).",
         (double)atomic_load(&st->partitions)},
        {"tessera_scheduler_redis_lost", "gauge",
         "1 while Redis lacks the scheduler's data (no passes run).", x->redis_lost ? 1 : 0},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(rows); i++) {
        metrics_family(out, rows[i].name, rows[i].type, rows[i].help);
        metrics_sample(out, rows[i].name, NULL, rows[i].v);
    }
}

static bool check_consumers(svc *s, void *ctx, ts_err *err)
{
    (void)s;
    sched_svc *x = ctx;
    if (!atomic_load(&x->agents_assigned)) {
        if (!kbus_consumer_assigned(x->c_agents)) {
            ts_err_set(err, "the tessera.agent.v1 consumer has no partition yet");
            return false;
        }
        atomic_store(&x->agents_assigned, true);
    }
    return true;
}

bool sched_svc_start(svc *s, ts_err *err)
{
    sched_order o;
    sched_selector sel;
    if (!sched_order_parse(sched_cfg.default_order, &o) ||
        !sched_selector_parse(sched_cfg.default_selector, &sel)) {
        ts_err_set(err, "scheduler.default_order / default_selector: unknown name");
        return false;
    }
    for (const char *p = sched_cfg.key_prefix; *p; p++)
        if (*p <= ' ') {
            ts_err_set(err, "scheduler.key_prefix must not contain blanks");
            return false;
        }
    sched_svc *x = ts_calloc(1, sizeof(*x));
    x->s = s;
    x->bus = svc_bus(s);
    x->producer = svc_producer(s);
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->cv, NULL);
    svc_set_data(s, x);
    int rc = pthread_create(&x->thread, NULL, thread_main, x);
    if (rc != 0) {
        ts_err_set(err, "scheduler thread: %s", strerror(rc));
        return false;
    }
    x->thread_started = true;
    pthread_mutex_lock(&x->mu);
    while (!x->loaded)
        pthread_cond_wait(&x->cv, &x->mu);
    pthread_mutex_unlock(&x->mu);
    if (!x->load_ok) {
        ts_err_set(err, "loading state from Redis: %s", x->load_err.msg);
        pthread_join(x->thread, NULL);
        x->thread_started = false;
        return false;
    }
    if (!sched_consumers_start(x, err)) return false;
    metrics_add(svc_metrics(s), collect, x);
    svc_add_check(s, "consumers", check_consumers, x);
    TLOG_INFO("scheduler started", "prefix=\"%s\" sweep_ms=%lld batch=%lld", sched_cfg.key_prefix,
              (long long)sched_cfg.sweep_interval_ms, (long long)sched_cfg.reserve_batch);
    return true;
}

void sched_svc_stop(svc *s)
{
    sched_svc *x = svc_data(s);
    if (!x) return;
    /* consumers first: what they handed over is applied or replayed after restart */
    if (x->c_sessions) sched_consumers_stop(x);
    if (x->thread_started) {
        pthread_mutex_lock(&x->mu);
        x->stop = true;
        pthread_cond_broadcast(&x->cv);
        pthread_mutex_unlock(&x->mu);
        pthread_join(x->thread, NULL);
    }
    while (x->head) {
        sched_ev *n = x->head->next;
        sched_ev_free(x->head);
        x->head = n;
    }
    for (size_t i = 0; i < x->nunpersist; i++)
        free(x->unpersist[i]);
    free(x->unpersist);
    sched_batch_free(x->batch);
    if (x->recs) strmap_free(x->recs, sched_rec_free);
    if (x->agents) strmap_free(x->agents, free_info);
    if (x->dirty) strmap_free(x->dirty, NULL);
    if (x->ext_accounts) strmap_free(x->ext_accounts, NULL);
    sched_engine_free(x->e);
    resv_free(x->v);
    /* the metrics collector may still be called until svc exits: keep x itself */
}
