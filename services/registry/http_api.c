/* http_api.c: tessera-registry's routes, one module per concern; every
 * handler gets the svc as its context. */
#include "http_api.h"

#include "agents_admin.h"
#include "bgtasks.h"
#include "check_presets.h"
#include "config_store.h"
#include "images.h"
#include "mounts.h"
#include "resource_groups.h"
#include "resource_presets.h"
#include "scaling_groups.h"
#include "session_create.h"
#include "session_relay.h"
#include "session_templates.h"
#include "occupancy_sync.h"
#include "sessions.h"
#include "template_launch.h"
#include "usage_api.h"
#include "usage_bai.h"
#include "usage_stats.h"

void registry_routes(svc *s)
{
    session_create_routes(s);    /* POST /v1/sessions (session_create.h) */
    template_launch_routes(s);   /* POST /v1/sessions/_/create-from-template */
    sessions_routes(s);          /* /v1/sessions... (sessions.h) */
    session_templates_routes(s); /* /v1/session-templates... (session_templates.h) */
    session_relay_routes(s);     /* /v1/sessions/{id}/execute, /logs, /apps (session_relay.h) */
    agents_admin_routes(s);      /* /v1/admin/agents... (agents_admin.h) */
    resource_groups_routes(s);   /* /v1/admin/resource-groups... */
    images_routes(s);            /* /v1/admin/images... */
    bgtasks_routes(s);           /* /v1/bgtasks/{id} (bgtasks.h) */
    resource_presets_routes(s);  /* /v1/resource/presets, /v1/admin/resource-presets... */
    scaling_groups_routes(s);    /* /v1/scaling-groups (scaling_groups.h) */
    check_presets_routes(s);     /* /v1/resource/check-presets (check_presets.h) */
    mounts_routes(s);            /* /v1/vfolder-mounts/{vfolder_id} (mounts.h) */
    occupancy_routes(s);         /* /v1/admin/occupancy/recalculate (occupancy_sync.h) */
    usage_stats_routes(s);       /* /v1/resource/stats/{user,admin}/month (usage_stats.h) */
    config_store_routes(s);      /* /v1/config/get|set|delete (config_store.h) */
    usage_api_routes(s);         /* /v1/usage (usage_api.h) */
    usage_bai_routes(s);         /* /v1/resource/usage/month|period (usage_bai.h) */
}
