/* idle_network.h: idle reclamation's network/interaction checker
 * (docs/sessions.md, "Idle reclamation"; Backend.AI's network_timeout).
 *
 * An interactive session RUNNING with a positive idle_timeout (seconds; the
 * strictest of its scopes', idle_scopes.h; 0: never idle) is reclaimed
 * when nothing used it for that long: no request or byte proxied by
 * tessera-wsproxy, no stream of the gateway (terminal, execute, tunnel)
 * moving a message, no execute or file transfer relayed by the registry.
 * Batch sessions are exempt, inference sessions unless their resource group
 * says idle_inference (idle_scopes.h). Each of those marks Redis
 * session:<id>:last_access (Unix ms; wsproxy at most once a second per
 * worker, the gateway at most every few seconds per stream): an open
 * connection that moves nothing marks nothing, so a forgotten browser tab
 * does not keep a session.
 *
 * The deadline is durable: registry.sessions.idle_deadline, set at each
 * RUNNING (db_common.h's SESSION_DEADLINES_SET), NULL otherwise, indexed. The sweep (the
 * housekeeping thread, every registry.pending_check_interval) reads only
 * the sessions whose deadline passed; for each, under its row lock, a mark
 * newer than deadline - idle_timeout pushes the deadline to mark +
 * idle_timeout, otherwise the session is terminated as a destroy is, with
 *   "idle: no app traffic or exec for N s"
 * So an active session costs one Redis read and one UPDATE per idle_timeout,
 * a restarted registry resumes from the table, and several registries end a
 * session once (the row lock, then RUNNING and the deadline checked again).
 * Redis unreadable: nothing is reclaimed (not measured is not idle). */
#ifndef REGISTRY_IDLE_NETWORK_H
#define REGISTRY_IDLE_NETWORK_H

#include "libcommon/svc.h"

#include <jansson.h>
#include <stdint.h>

/* The Redis key of the session's last use. */
#define IDLE_LAST_ACCESS_KEY "session:%s:last_access"

/* Terminate the sessions idle past their deadline, push the others' (*ended:
 * how many ended); false on a database error (logged). */
bool idle_network_sweep(int *ended) TS_MUST_CHECK;

/* tessera_registry_idle_reclaimed_total{checker} and
 * tessera_registry_idle_deadlines_pushed_total on s's /metrics. */
void idle_network_register_metrics(svc *s);

/* Record use of the session now (the registry's own relays, the gateway's
 * streams); false with err when Redis failed. */
bool idle_mark_active(const char *session_id, ts_err *err) TS_MUST_CHECK;

/* The session's last recorded use (Unix ms; 0: none); false with err when
 * Redis failed. */
bool idle_last_access(const char *session_id, int64_t *ms, ts_err *err) TS_MUST_CHECK;

/* What a session's idle report is made of (Unix ms; 0: none). */
typedef struct idle_inputs {
    int64_t now_ms;
    int64_t deadline_ms;     /* the stored idle deadline */
    int64_t last_ms;         /* its last use */
    int timeout_s;           /* its idle_timeout */
    const char *level;       /* the scope that set it (idle_scopes.h), or NULL */
    int64_t lifetime_end_ms; /* first RUNNING + max_lifetime (session_lifetime.h) */
    int max_lifetime_s;
} idle_inputs;

/* Backend.AI's idle_checks of a session, one object per checker, each
 * {"remaining": seconds left (>= 0) or null when the checker does not apply,
 * "remaining_time_type": "expire_after", "extra": null or}:
 *   network_timeout   extra {"timeout": idle_timeout, "level": the scope that
 *                     set it}; the later of the deadline and last use +
 *                     idle_timeout
 *   session_lifetime  extra {"max_lifetime": N}; until the lifetime ends
 * New reference. */
json_t *idle_checks_json(const idle_inputs *in);
/* checks (idle_checks_json's, made without the last use) with the
 * session's last use from Redis counted (unchanged when Redis fails). */
void idle_checks_refine(json_t *checks, const char *session_id);

#endif
