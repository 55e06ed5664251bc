/* session_enqueued.h: SessionEnqueued on tessera.session.v1, the scheduler's
 * cue that a PENDING session waits (docs/events.md). Published from the
 * database (the session, its kernels and its owner's limits, as stored) right
 * after the create's COMMIT, and again by the housekeeping for the PENDING
 * sessions whose event the producer never took (sessions.enqueue_published
 * false). */
#ifndef REGISTRY_SESSION_ENQUEUED_H
#define REGISTRY_SESSION_ENQUEUED_H

#include "libcommon/svc.h"

/* Publish SessionEnqueued for the session when it is PENDING, and mark it
 * published (also when it no longer is PENDING: nothing to announce). */
bool session_enqueued_publish(PGconn *conn, const char *session_id, const char *correlation_id,
                              ts_err *err) TS_MUST_CHECK;

/* Housekeeping: publish the PENDING sessions (older than 2 s) whose
 * SessionEnqueued was not handed to the producer. */
void session_enqueued_republish(void);

#endif
