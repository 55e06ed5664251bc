/* deps.h: what this process last saw of the dependencies it cannot work
 * without (PostgreSQL, Redis, the Kafka bus), process-wide.
 *
 * The clients mark a dependency down when talking to it failed at the
 * connection level (refused, reset, timed out: not a statement or a reply
 * that was an error) and up when it answered again, so the state is the last
 * thing observed, with no polling of its own. Readers:
 *   - http_problem: a handler's 500 while a dependency is down becomes 503
 *     service-unavailable with Retry-After (the request may work later);
 *   - the bus consumers (kbus.h): a handler that asks to retry while a
 *     dependency is down pauses its consumer instead of spending attempts;
 *   - /metrics: tessera_dependency_up, tessera_dependency_outages_total. */
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

/* Seconds a client is told to wait (Retry-After) while a dependency is down. */
#define DEPS_RETRY_AFTER_S 5

/* Mark dep down (why: one line, kept for logs) / up. Both are cheap when the
 * state does not change (one atomic load); a change is logged once. */
void deps_mark_down(deps_id dep, const char *why);
void deps_mark_up(deps_id dep);

/* The name of the first dependency now down, or NULL when all are up. */
const char *deps_down(void);
bool deps_is_down(deps_id dep) TS_MUST_CHECK;
const char *deps_name(deps_id dep);

/* Prometheus text for the families above (metrics.h collector); ctx points
 * to an unsigned mask of (1 << deps_id) naming the dependencies to show
 * (NULL: all). */
void deps_collect(FILE *out, void *ctx);

#endif
