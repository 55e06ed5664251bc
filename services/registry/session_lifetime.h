/* session_lifetime.h: a keypair policy's max_session_lifetime (seconds, 0 =
 * none, taken into registry.sessions.max_lifetime when the session is
 * created) ends a session that has run longer than that since it first
 * became RUNNING (a restart does not reset it), as Backend.AI's session
 * lifetime checker does. The session is terminated like a destroy (its
 * kernels get DestroyKernel, then TERMINATED) with the reason
 *   "session lifetime: ran more than N s"
 * The deadline is durable (registry.sessions.lifetime_deadline, set at the
 * first RUNNING, kept through restarts, NULL once final; migration 0022),
 * so a pass reads only the sessions due through its partial index. Run by
 * the housekeeping thread every registry.pending_check_interval. */
#ifndef REGISTRY_SESSION_LIFETIME_H
#define REGISTRY_SESSION_LIFETIME_H

#include "libcommon/common.h"

/* Terminate up to 100 sessions past their lifetime (*ended: how many); false
 * on a database error (logged). */
bool session_lifetime_sweep(int *ended) TS_MUST_CHECK;

#endif
