/* waiters.h: create calls that wait for their session to reach RUNNING or a
 * final status (maxWaitSeconds), without polling the database in the common
 * case: the lifecycle code notifies every status change it commits
 * (publish.h's outbox), and the waiting handler sleeps on a condition
 * variable until its session's status is one it waits for, or its deadline
 * passes.
 *
 * Several registry instances: the change may be committed by another
 * instance (its event consumers took the session's partition) than the one
 * whose handler waits. So every RUNNING or final status is also appended to
 * the Redis stream <registry.redis_prefix>registry:session-status (fields
 * session, status; MAXLEN ~10000), which every instance follows (XREAD
 * BLOCK, one thread: waiters_feed_start) into its own waiters. A change
 * that never reaches the stream (its instance died between the commit and
 * the XADD, Redis down) is caught by the waiter itself, which reads the
 * session's status in PostgreSQL every WAITERS_RECHECK_MS. */
#ifndef REGISTRY_WAITERS_H
#define REGISTRY_WAITERS_H

#include "libcommon/common.h"

#define WAITERS_RECHECK_MS 1000

typedef struct waiter waiter;

/* Register before the session can change (before SessionEnqueued is
 * published), so no change is missed. NULL when max_waiting waiters already
 * wait (the caller then answers at once). */
waiter *waiters_add(const char *session_id, int max_waiting);
/* Wait until RUNNING or a final status, or deadline_ms (monotonic) passes;
 * the last status seen (or "" when none) is copied to status. Removes the
 * waiter. */
void waiters_wait(waiter *w, int64_t deadline_ms, char *status, size_t size);
/* A committed status change of this instance: its waiters, and (RUNNING or
 * final) the stream for the other instances'. */
void waiters_notify(const char *session_id, const char *status);
/* How many wait now (metrics, tests). */
int waiters_count(void);

/* Follow the stream (a thread); stop it at shutdown. */
bool waiters_feed_start(ts_err *err) TS_MUST_CHECK;
void waiters_feed_stop(void);

#endif
