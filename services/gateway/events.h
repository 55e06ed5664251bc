/* events.h: Backend.AI's event streams (server-sent events; docs/events.md
 * "Event streams", docs/api.md):
 *
 *   GET /events/session          session and kernel lifecycle events, as
 *                                 the caller may see them (the scoping of
 *                                 GET /session?all=true): a user its own
 *                                 sessions, a domain admin its domain's, a
 *                                 superadmin all. Filters: sessionName (or
 *                                 name; "*": all), sessionId, ownerAccessKey
 *                                 (a user: only its own), group ("*", a
 *                                 project id or name), scope ("*", "session",
 *                                 "kernel", comma-separated).
 *   GET /events/background-task  ?taskId= (or task_id): a registry background
 *                                 task's progress (bgtask_updated), then
 *                                 bgtask_done / bgtask_failed /
 *                                 bgtask_cancelled and the end (bgtasks.c).
 *
 * Streams hold no HTTP worker while they wait (libcommon http.h's event
 * streams). Session events come from tessera.session.v1 and
 * tessera.kernel.v1 through a broadcast consumer of this instance (every
 * instance sees every event, from its start on); each session's owner,
 * project and domain come from its SessionEnqueued or, once, from the
 * registry (GET /v1/sessions/{id} as the stream's caller: what the registry
 * does not show that caller is not sent to it). A hub keeps the open streams:
 * at most gateway.max_event_streams (beyond: 503), a keep-alive comment every
 * gateway.event_keepalive, a client that left is noticed within a second and
 * its stream freed. Metric: tessera_gateway_event_streams (open now). */
#ifndef GATEWAY_EVENTS_H
#define GATEWAY_EVENTS_H

#include "gateway.h"
#include "identity.h"

/* ---- the hub (events.c), shared with bgtasks.c ---- */
typedef enum ev_kind { EV_SESSION, EV_BGTASK } ev_kind;

typedef struct ev_stream ev_stream;
/* Once a second, on the hub's thread (never with the hub locked), for each
 * open background-task stream; false: the stream is over (it ended it). */
typedef bool (*ev_poll_fn)(gateway *gw, ev_stream *st, void *state);

/* Open an event stream answering req (resp gets the 200 event-stream
 * answer), of kind, for the verified caller id; state is the kind's own
 * (freed with free_state when the stream goes). NULL with a 503 problem in
 * resp when gateway.max_event_streams are open (free_state(state) called). */
ev_stream *events_open(gateway *gw, http_req *req, http_resp *resp, ev_kind kind,
                       const gw_identity *id, void *state, void (*free_state)(void *),
                       ev_poll_fn poll);
/* Send one event (data: compact JSON) on st; false when it is over. */
bool events_send(ev_stream *st, const char *event, json_t *data) TS_MUST_CHECK;
/* End st after what was sent. */
void events_end(ev_stream *st);
const gw_identity *events_caller(const ev_stream *st);
void *events_state(const ev_stream *st);
/* For events_session.c: call fn on every open session stream, on this
 * thread, each held so that it is not freed meanwhile. */
void events_each_session(void (*fn)(gateway *gw, ev_stream *st, void *ctx), void *ctx);

/* The hub's thread and the metric (the routes: events_session.h, bgtasks.h). */
bool events_start(gateway *gw, ts_err *err) TS_MUST_CHECK;
/* Stop the thread; the streams still open are ended and freed. */
void events_stop(void);

#endif
