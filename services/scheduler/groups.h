/* groups.h: the resource groups of the scheduling thread's engine: made on
 * first use with their policy (scheduler.default_order / default_selector, or
 * scheduler.group_policies "gpu=drf/dispersed,cpu=lifo/roundrobin"), and the
 * set of groups that want a pass (x->dirty, taken by sessions.c's passes). */
#ifndef TESSERA_SCHED_GROUPS_H
#define TESSERA_SCHED_GROUPS_H

#include "services/scheduler/state.h"

/* The group exists in the engine (created with the configured policy on first
 * use); false when the name or its policy is bad. */
bool sched_ensure_group(sched_svc *x, const char *group) TS_MUST_CHECK;
/* The group wants a pass. */
void sched_mark_dirty(sched_svc *x, const char *group);
/* Every known agent's group wants a pass. */
void sched_mark_all_dirty(sched_svc *x);

#endif
