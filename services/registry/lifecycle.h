/* lifecycle.h: the registry's consumer groups of the session lifecycle, in
 * kbus's batch mode:
 *   tessera-registry.sessions  tessera.session.v1, the scheduler's placements
 *                              (session_events.h)
 *   tessera-registry.kernels   tessera.kernel.v1, the agents' kernel events
 *                              (kernel_events.h)
 * each registry.event_consumers consumers (event_consumers.h), with their
 * readiness checks session-events and kernel-events. */
#ifndef REGISTRY_LIFECYCLE_H
#define REGISTRY_LIFECYCLE_H

#include "libcommon/svc.h"

bool lifecycle_start(svc *s, ts_err *err) TS_MUST_CHECK;
void lifecycle_stop(void);

#endif
