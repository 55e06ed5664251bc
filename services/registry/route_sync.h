/* route_sync.h: wsproxy's app routes, rebuilt from the system of record when
 * Redis loses them (docs/wsproxy.md, "Routes after a Redis loss").
 *
 * wsproxy journals every route and cookie it stores (stream
 * wsproxy:routes:journal) and makes wsproxy:routes:epoch with the first one
 * after Redis was empty. Every registry.reconcile_interval, route_sync_pass:
 *   1. copies the journal's new entries of RUNNING sessions into
 *      registry.app_routes (where it stands: registry.route_sync);
 *   2. compares the epoch with the one recorded: when Redis has none or
 *      another, Redis lost the routes: every unexpired route of a RUNNING
 *      session is sent to wsproxy's POST /v1/routes/restore (which stores
 *      them as they were and makes the epoch); sessions that ended meanwhile
 *      get their routes removed again; one repair (kind routes_restored) per
 *      session;
 *   3. now and then (every 30 passes) removes the routes of sessions that
 *      ended (TERMINATING or final, or gone) in wsproxy again, a backstop for
 *      a removal lost at their end, and then their rows; and expired rows.
 * The registry reads the journal and the epoch in its own Redis (redis.url):
 * wsproxy must use the same one. Routes stored in the last interval before
 * a loss, not yet copied, are lost with it. */
#ifndef REGISTRY_ROUTE_SYNC_H
#define REGISTRY_ROUTE_SYNC_H

#include "libcommon/svc.h"

void route_sync_pass(void);

#endif
