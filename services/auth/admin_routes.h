/* admin_routes.h: the admin resources beside users and keypairs: domains,
 * projects and members, resource policies, resource-group access and the
 * access-log query. */
#ifndef AUTH_ADMIN_ROUTES_H
#define AUTH_ADMIN_ROUTES_H

#include "libcommon/svc.h"

/* Registers /v1/admin/{domains,projects,keypair-resource-policies,
 * user-resource-policies,project-resource-policies,resource-group-access,
 * access-log} with s as the route context. auth_routes() (http_api.c) calls
 * it. */
void admin_resources_routes(svc *s);

#endif
