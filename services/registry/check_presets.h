/* check_presets.h: POST /v1/resource/check-presets, what the caller may
 * still start, in Backend.AI's shape (manager api/resource.py check_presets).
 *
 * Body (may be empty): {"group"?: project name or id, "scaling_group"?: name}.
 * Other keys, or values that are not strings: 400. An unknown project: 404,
 * one the caller is not a member of: 403; a resource group the caller may not
 * use (unknown, inactive, not allowed): 404.
 *
 * Answer (slot values are decimal text over cpu, mem, cuda.device,
 * cuda.shares; "Infinity" where no limit applies, as Backend.AI writes it):
 *   keypair_limits           the keypair resource policy's total_resource_slots
 *   keypair_using            what the keypair's sessions hold (Redis usage:kp:<ak>)
 *   keypair_remaining        min over the keypair's, the user's, the project's
 *                            and the domain's (limit - using), floored at 0
 *   group_limits, group_using, group_remaining
 *                            the project's (Backend.AI's "group"); "NaN" for
 *                            callers who are not administrators (Backend.AI's
 *                            default group_resource_visibility = false), and
 *                            null without a project
 *   scaling_group_remaining  min(keypair_remaining, the free capacity of the
 *                            ALIVE agents of every group considered)
 *   scaling_groups           {name: {"using": the user's kernels there,
 *                            "remaining": min(keypair_remaining, its agents' free)}}
 *                            for each allowed active group, or the one named
 *   presets                  [{"name", "resource_slots", "shared_memory",
 *                            "allocatable"}]: allocatable when keypair_remaining
 *                            allows it and one agent of those groups can hold it
 * Tessera extensions:
 *   tessera_scopes           {"keypair", "user", and for administrators "project"
 *                            (null without one) and "domain"}: each {"limits",
 *                            "using", "remaining"} (users have no slot limits:
 *                            all "Infinity")
 *   tessera_usage_source     "redis" (the scheduler's counters) or "database"
 *                            (Redis unreadable or awaiting its rebuild) */
#ifndef REGISTRY_CHECK_PRESETS_H
#define REGISTRY_CHECK_PRESETS_H

#include "libcommon/svc.h"

void check_presets_routes(svc *s);

#endif
