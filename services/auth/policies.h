/* policies.h: keypair, user and project resource policies (docs/api.md
 * "Admin REST"):
 *   /v1/admin/keypair-resource-policies[/{name}]
 *   /v1/admin/user-resource-policies[/{name}]
 *   /v1/admin/project-resource-policies[/{name}]
 * Superadmins create, change and delete; domain admins read; users get 403.
 * Every change publishes PolicyChanged on tessera.auth.v1 after it commits.
 * The limit values they hold are validated as limits.h says. */
#ifndef AUTH_POLICIES_H
#define AUTH_POLICIES_H

#include "libcommon/svc.h"

void policies_routes(svc *s);

#endif
