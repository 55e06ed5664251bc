/* bgtasks.h: GET /events/background-task?taskId= (or task_id) (events.h):
 * a registry background task followed by polling its row (GET
 * /v1/bgtasks/{id} on tessera-registry as the caller, twice a second on the
 * hub's thread), so any gateway instance follows any task. Events:
 * bgtask_updated {"task_id", "current_progress", "total_progress",
 * "message"} when the progress or message changed, then bgtask_done,
 * bgtask_failed or bgtask_cancelled (same data) and the end of the stream.
 * A task that already ended answers its last event at once. Missing or
 * malformed taskId: 400; a task that is unknown or not the caller's: 404. */
#ifndef GATEWAY_BGTASKS_H
#define GATEWAY_BGTASKS_H

#include "gateway.h"

void bgtasks_routes(gateway *gw);

#endif
