/* events_session.h: GET /events/session (events.h): the route, its filters
 * and the consumer handler that turns tessera.session.v1 and
 * tessera.kernel.v1 events into Backend.AI's session_* and kernel_* events
 * on the streams that may see them. */
#ifndef GATEWAY_EVENTS_SESSION_H
#define GATEWAY_EVENTS_SESSION_H

#include "events.h"
/* GET /events/session on gw's router. */
void events_session_routes(gateway *gw);
/* The broadcast consumer of tessera.session.v1 and tessera.kernel.v1 (after
 * events_start); stopped before events_stop. */
bool events_session_start(gateway *gw, ts_err *err) TS_MUST_CHECK;
void events_session_stop(void);

#endif
