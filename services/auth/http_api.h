/* http_api.h: tessera-auth's internal HTTP routes (docs/internal-api.md). */
#ifndef AUTH_HTTP_API_H
#define AUTH_HTTP_API_H

#include "libcommon/svc.h"

/* Register every route: credentials, authorize, role, update-password, the
 * admin users and keypairs, and (admin_resources_routes, admin.h) domains,
 * projects, members, policies, resource-group access and the access log. */
void auth_routes(svc *s);

#endif
