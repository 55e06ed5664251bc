/* waiters.h: create calls that wait for their session to reach RUNNING or a
 * final status (maxWaitSeconds), without polling the database: the lifecycle
 * code notifies every status change it commits (publish.h's outbox), and the
 * waiting handler sleeps on a condition variable until its session's status
 * is one it waits for, or its deadline passes. */
#ifndef REGISTRY_WAITERS_H
#define REGISTRY_WAITERS_H

#include "libcommon/common.h"

typedef struct waiter waiter;

/* Register before the session can change (before SessionEnqueued is
 * published), so no change is missed. NULL when max_waiting waiters already
 * wait (the caller then answers at once). */
waiter *waiters_add(const char *session_id, int max_waiting);
/* Wait until RUNNING or a final status, or deadline_ms (monotonic) passes;
 * the last status seen (or "" when none) is copied to status. Removes the
 * waiter. */
void waiters_wait(waiter *w, int64_t deadline_ms, char *status, size_t size);
/* A committed status change. */
void waiters_notify(const char *session_id, const char *status);
/* How many wait now (metrics, tests). */
int waiters_count(void);

#endif
