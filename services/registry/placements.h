/* placements.h: the scheduler's SessionScheduled applied to PENDING
 * sessions, several at a time in the same three statements (kernels placed,
 * sessions SCHEDULED then PREPARING with both history rows, the CreateKernel
 * read), so a batch of placements costs three round trips to PostgreSQL, not
 * three per session. lifecycle.c hands it every batch's placements of PENDING
 * sessions, and a lone one the same way. */
#ifndef REGISTRY_PLACEMENTS_H
#define REGISTRY_PLACEMENTS_H

#include "transitions.h"
#include "tessera/v1/session.pb-c.h"

#include <jansson.h>

/* One placement, checked and turned into what the statements take. */
typedef struct placement {
    sess *s;                                /* locked by the caller, PENDING */
    const Tessera__V1__SessionScheduled *m; /* its kernels */
    outbox *ob;                             /* what it decides, published after COMMIT */
    json_t *kernels;                        /* [{kid, sid, agent, slots, devices}] */
    char *occupied;                         /* the session's total slots, JSON */
    char why[300];                          /* "scheduled on AGENT[, AGENT...]" */
} placement;

/* Check m against the session (as many kernels as it has, each with an agent,
 * a kernel id that is a UUID and slots that parse) and fill p; false with err
 * when the placement cannot be applied at all. */
bool placement_prepare(placement *p, sess *s, const Tessera__V1__SessionScheduled *m, outbox *ob,
                       ts_err *err) TS_MUST_CHECK;
void placement_free(placement *p);

/* Apply n prepared placements inside the caller's transaction: KBUS_DONE,
 * KBUS_RETRY on a database error, KBUS_REJECT (err names it) when a kernel
 * of the placement is not a PENDING kernel of its session; then the caller
 * rolls back. Each session becomes PREPARING (struct included), its outbox
 * gets both waiter notifications, a CreateKernel per kernel and
 * SessionPreparing. */
kbus_result placements_apply(PGconn *conn, placement *p, size_t n, ts_err *err);

/* SessionPreparing for the session into ob. */
void placement_preparing_event(outbox *ob, const sess *s);

#endif
