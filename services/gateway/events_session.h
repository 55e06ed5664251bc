/* events_session.h: GET /events/session (events.h): the route, its filters
 * and the consumer handler that turns tessera.session.v1 and
 * tessera.kernel.v1 events into Backend.AI's session_* and kernel_* events
 * on the streams that may see them. */
#ifndef GATEWAY_EVENTS_SESSION_H
#define GATEWAY_EVENTS_SESSION_H

#include "events.h"

#include "libcommon/kbus.h"

/* GET /events/session (ctx: the gateway). */
void events_session_route(http_req *req, http_resp *resp, void *ctx);
/* The broadcast consumer's handler (ctx: the gateway); always KBUS_DONE. */
kbus_result events_session_on_event(const kbus_msg *msg, void *ctx, ts_err *reason);

#endif
