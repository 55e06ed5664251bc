/* lifecycle.h: consumers of tessera.session.v1 (group
 * tessera-registry.sessions: SessionScheduled, SessionUnschedulable; the
 * registry's own events on that topic are skipped) and tessera.kernel.v1
 * (group tessera-registry.kernels: the agents' kernel events). The transitions
 * each event makes are in docs/sessions.md. */
#ifndef REGISTRY_LIFECYCLE_H
#define REGISTRY_LIFECYCLE_H

#include "registry.h"

bool lifecycle_start(svc *s, ts_err *err) TS_MUST_CHECK;
void lifecycle_stop(void);

#endif
