/* transitions.h: the session state machine's building blocks, used by the
 * event consumers (session_events.c, kernel_events.c, placements.c,
 * kernel_steps.c, agents.c), the periodic work (pending_timeout.c,
 * reconcile.c) and the HTTP handlers (sessions.c).
 *
 * Every function runs inside the caller's transaction, on a session row the
 * caller locked with tr_lock or tr_lock_many (SELECT ... FOR UPDATE: one
 * writer per session at a time, whichever thread), writes the history row of
 * each status change and puts the events and agent commands it decides into
 * the outbox, which the caller flushes after COMMIT. Callers check the
 * current status first: these functions do not guard again. Each status
 * change logs a "session status" line (name, from, to, reason); the caller
 * names the session in the thread's log context (tlog_ctx_session). */
#ifndef REGISTRY_TRANSITIONS_H
#define REGISTRY_TRANSITIONS_H

#include "db_common.h"
#include "publish.h"
#include "tessera/v1/common.pb-c.h"

typedef struct sess {
    char id[TS_UUID_STRLEN];
    char name[72];
    char status[16];
    char type[16];
    char access_key[24];
    char user_id[TS_UUID_STRLEN];
    char result[16];
    char info[512]; /* status_info */
    int cluster_size;
    bool has_exit_code;
    int exit_code;
} sess;

/* Lock and read a session; *found false when there is none. */
bool tr_lock(PGconn *conn, const char *session_id, sess *s, bool *found, ts_err *err) TS_MUST_CHECK;
/* Lock and read n distinct sessions in one statement (in id order, so that
 * two callers locking several never wait on each other in a cycle): out[i]
 * and found[i] for ids[i], each a valid UUID. */
bool tr_lock_many(PGconn *conn, const char *const *ids, size_t n, sess *out, bool *found,
                  ts_err *err) TS_MUST_CHECK;

/* status := to (with status_info = reason), history row, waiter notification.
 * A final status also sets terminated_at, clears occupied_slots and marks every
 * kernel of the session as no longer holding slots. */
bool tr_set(PGconn *conn, outbox *ob, sess *s, const char *to, const char *reason,
            ts_err *err) TS_MUST_CHECK;

/* What tr_set does besides its statement, for a status change the caller
 * wrote itself (the batch statements of placements.c and kernel_steps.c):
 * the "session status" log line, s updated, the waiters' notification. */
void tr_moved(outbox *ob, sess *s, const char *to, const char *reason);

/* End the session in a final status and publish what ends it:
 *   TERMINATED -> SessionTerminated (reason, the exit code when known)
 *   ERROR      -> SessionFailed (reason, error_code, kernel_id, agent_id)
 *   CANCELLED  -> SessionCancelled (reason, requested_by)
 * Kernels never placed become CANCELLED. The scheduler releases the session's
 * slots on each of these (exactly once, however often they arrive). */
bool tr_end(PGconn *conn, outbox *ob, sess *s, const char *final, const char *reason,
            const char *error_code, const char *kernel_id, const char *agent_id,
            const char *requested_by, ts_err *err) TS_MUST_CHECK;

/* DestroyKernel to the agent of every placed kernel of the session that has not
 * ended (kernel_status: what those kernels become, NULL = unchanged;
 * "RESTARTING" marks the commands as a restart's, DestroyKernel.restart, so
 * the agents keep the kernels' /home/work for the next generation). */
bool tr_destroy_kernels(PGconn *conn, outbox *ob, const sess *s, const char *reason, bool force,
                        const char *kernel_status, ts_err *err) TS_MUST_CHECK;

/* The session starts terminating (a destroy, a kernel's end): status
 * TERMINATING with status_info info, SessionTerminating (reason,
 * requested_by), DestroyKernel to its placed kernels, which become
 * TERMINATING. */
bool tr_terminate(PGconn *conn, outbox *ob, sess *s, const char *reason, const char *info,
                  const char *requested_by, ts_err *err) TS_MUST_CHECK;

/* The session (not RUNNING, not ended) becomes RUNNING when every kernel of it
 * is RUNNING: status, SessionRunning into ob; *moved says whether it did. */
bool tr_running_if_all_up(PGconn *conn, outbox *ob, sess *s, bool *moved,
                          ts_err *err) TS_MUST_CHECK;

/* SessionRunning into ob: its kernels, the main kernel's agent and service
 * ports (the caller made the status change). */
void tr_running_event(outbox *ob, const sess *s, char **kernel_ids, size_t n,
                      const char *main_agent_id, Tessera__V1__ServicePort **ports, size_t n_ports);

/* The TERMINATING session's kernels have all ended: its final status,
 * TERMINATED, or ERROR for an interactive session whose kernel failed
 * (result FAILURE), and the event that says so (tr_end). */
bool tr_finish(PGconn *conn, outbox *ob, sess *s, ts_err *err) TS_MUST_CHECK;

/* CreateKernel for the session's placed kernels in status from_status (or
 * every placed kernel when NULL); those kernels become to_status. */
bool tr_create_kernels(PGconn *conn, outbox *ob, const sess *s, const char *from_status,
                       const char *to_status, ts_err *err) TS_MUST_CHECK;

/* tr_create_kernels (from_status NULL, no status change) for n sessions in
 * one statement: the CreateKernel of session ids[i] go into obs[i]. */
bool tr_create_kernels_many(PGconn *conn, const char *const *ids, outbox *const *obs, size_t n,
                            ts_err *err) TS_MUST_CHECK;
/* Record the session's result and exit code (batch end, a kernel's exit). */
bool tr_set_result(PGconn *conn, sess *s, const char *result, int exit_code,
                   ts_err *err) TS_MUST_CHECK;

#endif
