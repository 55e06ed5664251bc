/* bgtasks.c: GET /events/background-task (bgtasks.h). */
#include "bgtasks.h"

#include "events.h"
#include "proxy.h"
#include "verify.h"

#include "libcommon/log.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define BGTASK_TIMEOUT_MS 3000

#define FIRST_EVENT_DELAY_US 200000

typedef struct task_state {
    char id[TS_UUID_STRLEN];
    json_int_t progress, total;
    char *message;
    bool sent;          /* something was sent */
    int64_t opened_us;  /* when the stream opened (monotonic) */
    pthread_mutex_t mu; /* the handler's first event and the hub's polls */
} task_state;

static void _free_state(void *p)
{
    task_state *t = p;
    if (!t) return;
    free(t->message);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

/* The task's row as id sees it: 1 (*out), 0 (not found), -1 (no answer). */
static int _fetch(gateway *gw, const gw_identity *id, const char *task, http_req *req, json_t **out)
{
    char target[80];
    snprintf(target, sizeof(target), "/v1/bgtasks/%s", task);
    http_req *local = req ? NULL : http_req_new_local("GET", target, NULL, NULL, 0);
    long status = 0;
    ts_err err = {{0}};
    *out = NULL;
    json_t *o = NULL;
    bool got = proxy_fetch_json(&gw->up[UPSTREAM_REGISTRY], BGTASK_TIMEOUT_MS, "GET",
                                req ? req : local, target, id, NULL, &status, &o, &err);
    if (local) http_req_free_local(local);
    if (got && status == 200 && json_is_object(o)) {
        *out = o;
        return 1;
    }
    json_decref(o);
    return got && (status == 404 || status == 400) ? 0 : -1;
}

/* Send what changed in row; false once the task ended (its last event sent). */
static bool _advance_locked(ev_stream *st, task_state *t, const json_t *row)
{
    json_int_t progress = json_integer_value(json_object_get(row, "current_progress"));
    json_int_t total = json_integer_value(json_object_get(row, "total_progress"));
    const char *msg = json_string_value(json_object_get(row, "message"));
    const char *status = json_string_value(json_object_get(row, "status"));
    if (!msg) msg = "";
    if (!status) status = "running";
    bool ended = strcmp(status, "running") != 0;
    bool changed = !t->sent || progress != t->progress || total != t->total ||
                   strcmp(msg, t->message ? t->message : "") != 0;
    if (!changed && !ended) return true;
    json_t *d = json_pack("{s:s, s:I, s:I, s:s}", "task_id", t->id, "current_progress", progress,
                          "total_progress", total, "message", msg);
    const char *name = !ended                             ? "bgtask_updated"
                       : strcmp(status, "done") == 0      ? "bgtask_done"
                       : strcmp(status, "cancelled") == 0 ? "bgtask_cancelled"
                                                          : "bgtask_failed";
    bool open = events_send(st, name, d);
    json_decref(d);
    /* then Backend.AI's server_close: its clients reconnect to a stream that
     * ends without it (and would follow an ended task for ever) */
    if (open && ended) {
        json_t *empty = json_object();
        open = events_send(st, "server_close", empty);
        json_decref(empty);
    }
    t->sent = true;
    t->progress = progress;
    t->total = total;
    free(t->message);
    t->message = ts_strdup(msg);
    return open && !ended;
}

static bool _advance(ev_stream *st, task_state *t, const json_t *row)
{
    pthread_mutex_lock(&t->mu);
    bool more = _advance_locked(st, t, row);
    pthread_mutex_unlock(&t->mu);
    return more;
}

static bool _poll(gateway *gw, ev_stream *st, void *state)
{
    task_state *t = state;
    if (ts_now_mono_us() - t->opened_us < FIRST_EVENT_DELAY_US) return true;
    json_t *row = NULL;
    int v = _fetch(gw, events_caller(st), t->id, NULL, &row);
    if (v < 0) return true; /* the registry did not answer: try again */
    if (v == 0) {
        TLOG_INFO("background task gone while followed", "task=%s", t->id);
        return false;
    }
    bool more = _advance(st, t, row);
    json_decref(row);
    return more;
}

static void h_events(http_req *req, http_resp *resp, void *ctx)
{
    gateway *gw = ctx;
    gw_identity id;
    if (!verify_request(gw, req, resp, &id)) return;
    const char *task = http_query_arg(req, "taskId");
    if (!task) task = http_query_arg(req, "task_id");
    if (!task || !*task) {
        http_problem(resp, 400, "invalid-api-params", NULL, "taskId is required");
        return;
    }
    if (!ts_uuid_valid(task)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "taskId must be a task id (a UUID)");
        return;
    }
    tlog_ctx_entity("task", task);
    json_t *row = NULL;
    int v = _fetch(gw, &id, task, req, &row);
    if (v == 0) {
        http_problem(resp, 404, "not-found", NULL, "no background task %s", task);
        return;
    }
    if (v < 0) {
        http_problem(resp, 503, "service-unavailable", NULL,
                     "tessera-registry did not answer about the task; try again later");
        return;
    }
    task_state *t = ts_calloc(1, sizeof(*t));
    snprintf(t->id, sizeof(t->id), "%s", task);
    pthread_mutex_init(&t->mu, NULL);
    t->opened_us = ts_now_mono_us();
    /* The first event comes from the hub's polls, at least FIRST_EVENT_DELAY
     * after the answer's head, not with it: Backend.AI's Python CLI starts a
     * spinner once the head is in, and an event read at once with the head
     * ends that spinner before it ever ran (a traceback there). */
    events_open(gw, req, resp, EV_BGTASK, &id, t, _free_state, _poll);
    json_decref(row);
}

void bgtasks_routes(gateway *gw)
{
    http_route(svc_router(gw->svc), "GET", "/events/background-task", h_events, gw);
}
