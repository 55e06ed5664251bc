/* deps.h: what this process has seen of the dependencies it cannot work
 * without (PostgreSQL, Redis, the Kafka bus), process-wide, judged over a
 * window rather than by one answer.
 *
 * The clients report every connection-level failure (refused, reset, timed
 * out: not a statement or a reply that was an error) with deps_failed() and
 * every answer with deps_answered(). A dependency then is:
 *   - up: its last contact was an answer;
 *   - failing: its last contact failed, but not for long enough to call it an
 *     outage (a slow answer that timed out under load is this, not an outage);
 *   - down: it has failed at least policy.failures times in a row and given no
 *     answer for policy.window_ms since the first of those failures.
 * One answer makes it up again. The policy comes from deps.down_after_failures
 * and deps.down_after (svc_options.h; docs/reliability.md). No polling of its
 * own: the state is what the clients saw. Readers:
 *   - http_problem: a handler's 500 while a dependency is failing or down
 *     becomes 503 service-unavailable with Retry-After (it may work later);
 *   - the bus consumers (kbus.h): a handler that asks to retry pauses its
 *     consumer only while a dependency is down; while one is only failing the
 *     try is repeated after one backoff and not counted;
 *   - /metrics: tessera_dependency_up, tessera_dependency_outages_total,
 *     tessera_dependency_failures_total. */
#ifndef TESSERA_DEPS_H
#define TESSERA_DEPS_H

#include "libcommon/common.h"

#include <stdio.h>

typedef enum deps_id {
    DEP_POSTGRESQL,
    DEP_REDIS,
    DEP_KAFKA,
    DEP_COUNT,
} deps_id;

/* Seconds a client is told to wait (Retry-After) while a dependency fails. */
#define DEPS_RETRY_AFTER_S 5

/* When failures make an outage: both must hold. */
typedef struct deps_policy {
    int failures;  /* consecutive failures, >= 1 (default 3) */
    int window_ms; /* since the first of them, with no answer, >= 0 (default 5000) */
} deps_policy;

#define DEPS_DEFAULT_FAILURES 3
#define DEPS_DEFAULT_WINDOW_MS 5000

/* Replace the policy (values out of range are clamped); applies to the
 * failures that follow. */
void deps_set_policy(const deps_policy *policy);
void deps_get_policy(deps_policy *out);

/* A connection-level failure (why: one line, kept for logs) / an answer.
 * deps_answered is one atomic load when nothing changes; a change of state is
 * logged once. */
void deps_failed(deps_id dep, const char *why);
void deps_answered(deps_id dep);

/* The name of the first dependency now down (deps_down) or failing or down
 * (deps_failing), or NULL when there is none. */
const char *deps_down(void);
const char *deps_failing(void);
bool deps_is_down(deps_id dep) TS_MUST_CHECK;
bool deps_is_failing(deps_id dep) TS_MUST_CHECK;
const char *deps_name(deps_id dep);

/* Forget every failure and outage (tests). */
void deps_reset(void);

/* Prometheus text for the families above (metrics.h collector); ctx points
 * to an unsigned mask of (1 << deps_id) naming the dependencies to show
 * (NULL: all). */
void deps_collect(FILE *out, void *ctx);

#endif
