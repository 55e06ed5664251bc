/* http_api.c: tessera-registry's routes, one module per concern; every
 * handler gets the svc as its context. */
#include "http_api.h"

#include "agents.h"
#include "images.h"
#include "mounts.h"
#include "resource_groups.h"
#include "sessions.h"

void registry_routes(svc *s)
{
    sessions_routes(s);        /* /v1/sessions... (sessions.h) */
    sessions_relay_routes(s);  /* /v1/sessions/{id}/execute and /logs (session_relay.c) */
    agents_routes(s);          /* /v1/admin/agents... */
    resource_groups_routes(s); /* /v1/admin/resource-groups... */
    images_routes(s);          /* /v1/admin/images... */
    mounts_routes(s);          /* /v1/vfolder-mounts/{vfolder_id} (mounts.h) */
}
