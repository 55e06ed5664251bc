/* events.c: the event streams' hub and GET /events/session (events.h). The
 * hub is a list of open streams under one lock. The consumer thread walks it
 * for each event; the hub's thread sweeps it once a second (streams whose
 * client left are unlinked and freed, keep-alive comments, background-task
 * polls). A stream is freed only by the hub's thread, and only while no
 * consumer pass holds it (busy), so both may use it outside the lock. */
#include "events.h"

#include "libcommon/log.h"
#include "libcommon/metrics.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ev_stream {
    http_event_stream *es;
    ev_kind kind;
    gw_identity id;
    void *state;
    void (*free_state)(void *);
    ev_poll_fn poll;
    int busy; /* consumer passes using it now (under g_hub.mu) */
    int64_t last_keepalive_ms;
    ev_stream *next;
};

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ev_stream *head;
    int open;
    bool running;
    pthread_t thread;
    gateway *gw;
} g_hub = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

ev_stream *events_open(gateway *gw, http_req *req, http_resp *resp, ev_kind kind,
                       const gw_identity *id, void *state, void (*free_state)(void *),
                       ev_poll_fn poll)
{
    pthread_mutex_lock(&g_hub.mu);
    if (g_hub.open >= gw->max_event_streams) {
        int open = g_hub.open;
        pthread_mutex_unlock(&g_hub.mu);
        if (free_state) free_state(state);
        TLOG_WARN("event stream refused: too many open", "open=%d max=%lld", open,
                  (long long)gw->max_event_streams);
        http_problem(resp, 503, "service-unavailable", "Service Unavailable",
                     "too many event streams are open on this gateway (%lld); try again later",
                     (long long)gw->max_event_streams);
        http_set_header(resp, "Retry-After", "5");
        return NULL;
    }
    ev_stream *st = ts_calloc(1, sizeof(*st));
    st->kind = kind;
    st->id = *id;
    st->state = state;
    st->free_state = free_state;
    st->poll = poll;
    st->last_keepalive_ms = ts_now_mono_ms();
    st->es = http_reply_events(req, resp);
    st->next = g_hub.head;
    g_hub.head = st;
    g_hub.open++;
    pthread_mutex_unlock(&g_hub.mu);
    /* the first bytes at once, so that a client knows the stream is open */
    if (!http_events_comment(st->es, "stream open")) TLOG_DEBUG("event stream over", "at=open");
    return st;
}

bool events_send(ev_stream *st, const char *event, json_t *data)
{
    char *text = json_dumps(data, JSON_COMPACT);
    if (!text) ts_panic("out of memory encoding an event");
    bool ok = http_events_send(st->es, event, text);
    free(text);
    return ok;
}

void events_end(ev_stream *st)
{
    http_events_end(st->es);
}

const gw_identity *events_caller(const ev_stream *st)
{
    return &st->id;
}

void *events_state(const ev_stream *st)
{
    return st->state;
}

/* ---- the session streams' walk (the consumer thread) ---- */

/* Hold every open session stream (busy) and call fn on each outside the lock. */
void events_each_session(void (*fn)(gateway *gw, ev_stream *st, void *ctx), void *ctx)
{
    pthread_mutex_lock(&g_hub.mu);
    size_t n = 0, cap = 16;
    ev_stream **held = ts_malloc(cap * sizeof(*held));
    for (ev_stream *st = g_hub.head; st; st = st->next) {
        if (st->kind != EV_SESSION) continue;
        if (n == cap) held = ts_realloc(held, (cap *= 2) * sizeof(*held));
        st->busy++;
        held[n++] = st;
    }
    pthread_mutex_unlock(&g_hub.mu);
    for (size_t i = 0; i < n; i++)
        fn(g_hub.gw, held[i], ctx);
    pthread_mutex_lock(&g_hub.mu);
    for (size_t i = 0; i < n; i++)
        held[i]->busy--;
    pthread_mutex_unlock(&g_hub.mu);
    free(held);
}

/* ---- the hub's thread ---- */

static void _free_stream(ev_stream *st)
{
    http_events_release(st->es);
    if (st->free_state) st->free_state(st->state);
    free(st);
}

/* Unlink and free the streams that are over; the background-task streams
 * still open are put in polls (at most cap). */
static size_t _sweep(ev_stream **polls, size_t cap)
{
    size_t n = 0;
    int64_t now = ts_now_mono_ms();
    ev_stream *dead = NULL;
    pthread_mutex_lock(&g_hub.mu);
    for (ev_stream **p = &g_hub.head; *p;) {
        ev_stream *st = *p;
        bool alive = http_events_alive(st->es);
        if (alive && now - st->last_keepalive_ms >= g_hub.gw->event_keepalive_ms) {
            st->last_keepalive_ms = now;
            alive = http_events_comment(st->es, "keep-alive");
        }
        if (!alive && st->busy == 0) {
            *p = st->next;
            g_hub.open--;
            st->next = dead;
            dead = st;
            continue;
        }
        if (alive && st->poll && n < cap) polls[n++] = st;
        p = &st->next;
    }
    pthread_mutex_unlock(&g_hub.mu);
    while (dead) {
        ev_stream *next = dead->next;
        TLOG_DEBUG("event stream closed", "kind=%s",
                   dead->kind == EV_SESSION ? "session" : "bgtask");
        _free_stream(dead);
        dead = next;
    }
    return n;
}

static void *_hub_main(void *arg)
{
    (void)arg;
    enum { MAX_POLLS = 1024 };
    ev_stream **polls = ts_malloc(MAX_POLLS * sizeof(*polls));
    pthread_mutex_lock(&g_hub.mu);
    while (g_hub.running) {
        pthread_mutex_unlock(&g_hub.mu);
        size_t n = _sweep(polls, MAX_POLLS);
        /* only this thread frees streams: those in polls stay valid */
        for (size_t i = 0; i < n; i++)
            if (!polls[i]->poll(g_hub.gw, polls[i], polls[i]->state)) events_end(polls[i]);
        pthread_mutex_lock(&g_hub.mu);
        if (!g_hub.running) break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 500 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&g_hub.cv, &g_hub.mu, &ts);
    }
    pthread_mutex_unlock(&g_hub.mu);
    free(polls);
    return NULL;
}

static void _collect(FILE *out, void *ctx)
{
    (void)ctx;
    pthread_mutex_lock(&g_hub.mu);
    int open = g_hub.open;
    pthread_mutex_unlock(&g_hub.mu);
    metrics_gauge(out, "tessera_gateway_event_streams",
                  "Event streams (/events/session, /events/background-task) open now.", open);
}

bool events_start(gateway *gw, ts_err *err)
{
    g_hub.gw = gw;
    metrics_add(svc_metrics(gw->svc), _collect, NULL);
    g_hub.running = true;
    if (pthread_create(&g_hub.thread, NULL, _hub_main, NULL) != 0) {
        g_hub.running = false;
        ts_err_set(err, "cannot start the event streams' thread");
        return false;
    }
    return true;
}

void events_stop(void)
{
    pthread_mutex_lock(&g_hub.mu);
    bool was = g_hub.running;
    g_hub.running = false;
    pthread_cond_broadcast(&g_hub.cv);
    pthread_mutex_unlock(&g_hub.mu);
    if (was) pthread_join(g_hub.thread, NULL);
    pthread_mutex_lock(&g_hub.mu);
    ev_stream *st = g_hub.head;
    g_hub.head = NULL;
    g_hub.open = 0;
    pthread_mutex_unlock(&g_hub.mu);
    while (st) {
        ev_stream *next = st->next;
        http_events_end(st->es);
        _free_stream(st);
        st = next;
    }
}
