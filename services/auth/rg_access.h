/* rg_access.h: which domains, projects and keypairs may use which resource
 * group, /v1/admin/resource-group-access (docs/api.md "Admin REST"):
 *   GET    ?resource_group=&scope_type=&scope_id=   list (paged)
 *   POST   {"resource_group", "scope_type", "scope_id"}   grant (idempotent:
 *          201 when new, 200 when it was there)
 *   DELETE (same body)   revoke (idempotent: "removed": true or false)
 *
 * scope_type is "domain" (scope_id a domain name), "project" (a project id)
 * or "keypair" (an access key). The scope must exist: 400 otherwise. The
 * resource groups themselves live in tessera-registry; here only their names
 * (1..64 characters, as policy names) are checked.
 *
 *   superadmin    every entry
 *   domain admin  entries whose scope is its domain, one of its projects or a
 *                 keypair of one of its users; any other scope, existing or
 *                 not, is 403 (so the answer does not tell whether it exists)
 *   user          403 */
#ifndef AUTH_RG_ACCESS_H
#define AUTH_RG_ACCESS_H

#include "libcommon/svc.h"

void rg_access_routes(svc *s);

#endif
