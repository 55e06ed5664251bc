/* bgtasks.h: the registry's background tasks (long work answered at once
 * with a task id; docs/sessions.md "Background tasks"), kept in
 * registry.bgtasks (migration 0008): kind, owner, status (running, done,
 * failed, cancelled), progress / total, message, timestamps.
 *
 *   GET /v1/bgtasks/{id}  the task as {"task_id", "kind", "status",
 *       "current_progress", "total_progress", "message", "created_at",
 *       "updated_at", "ended_at"}; its owner and superadmins only, 404 for
 *       anyone else (and for an unknown or malformed id: 400 for the latter).
 *
 * At the registry's start, the tasks this instance was running (its
 * previous life) and tasks nobody updated for 10 minutes are marked failed
 * ("the registry running it stopped"); ended tasks older than a day are
 * deleted (then and at each new task). */
#ifndef REGISTRY_BGTASKS_H
#define REGISTRY_BGTASKS_H

#include "libcommon/svc.h"

/* A new running task of kind, owned by user_id / access_key: its id in
 * id_out. False with err on a database failure. */
bool bgtask_create(const char *kind, const char *user_id, const char *access_key,
                   char id_out[TS_UUID_STRLEN], ts_err *err) TS_MUST_CHECK;
/* Progress of a running task (message NULL: unchanged). Failures are logged. */
void bgtask_progress(const char *id, int64_t done, int64_t total, const char *message);
/* The end: status "done", "failed" or "cancelled". Failures are logged. */
void bgtask_finish(const char *id, const char *status, const char *message);

/* Mark the tasks left running failed (see above). */
bool bgtasks_start(svc *s, ts_err *err) TS_MUST_CHECK;
void bgtasks_routes(svc *s);

#endif
