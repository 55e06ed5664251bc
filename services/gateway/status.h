/* status.h: GET /admin/status, the platform's health at a glance for
 * superadmins (docs/api.md): every service's /healthz and /readyz probed at
 * once, each within gateway.status_timeout (or the request's ?timeout=, at
 * most 30 s): the gateway itself, the upstreams (auth, registry, vfolder,
 * wsproxy), gateway.status_targets (the scheduler, the dev bus) and the
 * agents the registry lists with an address (?agents=false: not those).
 * A service that does not answer in time is a row "unreachable: <reason>",
 * never an error of the route: the answer is 200 once the caller may see it
 * (401 unsigned, 403 anyone but a superadmin, 400 a bad query). The rows
 * and the dependencies merged from them: status_report.h. */
#ifndef GATEWAY_STATUS_H
#define GATEWAY_STATUS_H

#include "gateway.h"

#define STATUS_MAX_TARGETS 16 /* gateway.status_targets */
#define STATUS_MAX_AGENTS 64  /* agents probed at most (the rest: a count) */
#define STATUS_MAX_TIMEOUT_MS 30000

/* Parse gateway.status_targets (false with err: start-up fails). */
bool status_init(gateway *gw, ts_err *err) TS_MUST_CHECK;
void status_routes(gateway *gw);

#endif
