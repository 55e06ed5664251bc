/* admin_routes.c: the admin resources beside users and keypairs: domains,
 * projects and members, resource policies, resource-group access and the
 * access-log query (docs/api.md "Admin REST"; scoping in each module's
 * header). */
#include "admin_routes.h"

#include "access_log_query.h"
#include "domains.h"
#include "policies.h"
#include "projects.h"
#include "rg_access.h"

void admin_resources_routes(svc *s)
{
    domains_routes(s);          /* /v1/admin/domains */
    projects_routes(s);         /* /v1/admin/projects, .../members */
    policies_routes(s);         /* /v1/admin/{keypair,user}-resource-policies */
    rg_access_routes(s);        /* /v1/admin/resource-group-access */
    access_log_query_routes(s); /* /v1/admin/access-log */
}
