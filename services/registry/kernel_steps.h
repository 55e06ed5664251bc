/* kernel_steps.h: the start path's kernel events, KernelCreating and
 * KernelStarted, applied for many kernels in a few statements. lifecycle.c
 * hands it, from a batch of tessera.kernel.v1, the events of sessions whose
 * events in the batch are one of these or both in that order, on a
 * one-kernel session that is SCHEDULED or PREPARING; the rest it applies one
 * by one.
 *
 * A step whose kernel update does not apply (duplicated, reordered, from
 * another agent, stale) is left undone: lifecycle.c then applies it alone,
 * which changes nothing either and logs why. */
#ifndef REGISTRY_KERNEL_STEPS_H
#define REGISTRY_KERNEL_STEPS_H

#include "transitions.h"
#include "tessera/v1/kernel.pb-c.h"

typedef struct kernel_step {
    sess *s;                                     /* locked by the caller */
    const Tessera__V1__KernelCreating *creating; /* one of these two */
    const Tessera__V1__KernelStarted *started;   /* (only of one-kernel sessions) */
    outbox *ob;
    bool done; /* out: applied */
} kernel_step;

/* Apply the steps inside the caller's transaction: every KernelCreating in
 * one statement, then every KernelStarted in one, then the sessions whose
 * kernel started RUNNING in one (history rows, waiter notification,
 * SessionRunning). false on a database error (err). */
bool kernel_steps_apply(PGconn *conn, kernel_step *steps, size_t n, ts_err *err) TS_MUST_CHECK;

#endif
