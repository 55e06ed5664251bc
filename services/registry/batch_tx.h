/* batch_tx.h: one transaction per batch of session-bound events, for the
 * registry's consumers of tessera.session.v1 (session_events.c) and
 * tessera.kernel.v1 (kernel_events.c).
 *
 * Each event is applied on its session row (locked): read the current status,
 * apply the change only when the event still makes sense in it (a duplicated
 * or reordered event finds the status already past it and changes nothing),
 * COMMIT, then publish what the change decided. The offset is stored only
 * after that (kbus: KBUS_DONE), so a crash replays the event and the guards
 * make the replay harmless.
 *
 * The events of a batch are applied in one transaction that first locks all
 * their sessions in one statement, in id order, so two batches cannot
 * deadlock. A pass (the caller's) then applies what it can for many sessions
 * at once (placements.c, kernel_steps.c); the other events follow one by one
 * in session id order (a session's own events keep their order), each named
 * in the thread's log context (session, kernel). One COMMIT then covers them
 * all; their outboxes are published after it. When any event of a batch
 * fails, the transaction is rolled back and kbus hands each event again alone
 * (n = 1: the same code, one event per transaction). */
#ifndef REGISTRY_BATCH_TX_H
#define REGISTRY_BATCH_TX_H

#include "libcommon/kbus.h"
#include "transitions.h"

/* Apply one event m on its locked session s (or, for not_found, on a session
 * of that id that does not exist: s has only its id). */
typedef kbus_result (*tx_apply_fn)(PGconn *conn, outbox *ob, sess *s, const void *m, ts_err *err);

/* One event of a batch for its session. */
typedef struct tx_item {
    const kbus_msg *msg;
    const char *session_id;
    const char *kernel_id; /* log context, or NULL */
    tx_apply_fn apply;
    tx_apply_fn not_found; /* an unknown session: NULL ignores the event */
    ProtobufCMessage *m;
    size_t order; /* position in the batch */
} tx_item;

/* The batch as a pass sees it, its sessions locked. */
typedef struct tx_batch {
    tx_item *items; /* sorted by session id, then order */
    size_t n;
    sess *ss;      /* item i's session is ss[group[i]] ... */
    bool *found;   /* ... and found[group[i]] says whether it exists */
    size_t *group; /* items of one session are adjacent: same group */
    outbox *obs;   /* item i's outbox */
    bool *done;    /* out: the pass applied item i */
} tx_batch;

/* A pass over the whole batch before the items one by one: it applies what
 * it can in fewer statements and sets done[i] for the items it applied. */
typedef kbus_result (*tx_pass_fn)(PGconn *conn, tx_batch *b, ts_err *reason);

/* Apply the items in one transaction as above (pass may be NULL). KBUS_REJECT
 * when a session id is not a UUID; KBUS_RETRY when the database failed. */
kbus_result batch_tx_apply(tx_item *items, size_t n, tx_pass_fn pass, ts_err *reason);

/* What a consumer does with one event type: apply it in the batch's
 * transaction (apply, not_found as tx_item's), or at once on its own before
 * the batch (alone). */
typedef struct tx_type {
    const char *type; /* "tessera.v1.KernelStarted" */
    const ProtobufCMessageDescriptor *desc;
    tx_apply_fn apply;
    tx_apply_fn not_found;
    kbus_result (*alone)(const ProtobufCMessage *m, ts_err *reason);
} tx_type;

/* A consumer's batch: each message of a type in types decoded (a payload that
 * does not decode: KBUS_REJECT) and handled as its type says; its session and
 * kernel are the message's session_id and kernel_id fields; other types are
 * not for this consumer. The batch's items go through batch_tx_apply with
 * pass. */
kbus_result batch_tx_consume(const kbus_msg *msgs, size_t n, const tx_type *types, size_t n_types,
                             tx_pass_fn pass, ts_err *reason);

/* One message m of type (its full name) that did not come from the bus,
 * applied as batch_tx_consume applies it, alone in its transaction. A type
 * not in types: KBUS_REJECT. */
kbus_result batch_tx_apply_message(const tx_type *types, size_t n_types, const char *type,
                                   ProtobufCMessage *m, ts_err *reason);

#endif
