/* domains.h: the admin REST API for domains, /v1/admin/domains[/{name}]
 * (docs/api.md "Admin REST").
 *
 *   superadmin    list, create, get, patch (every field), delete (deactivate)
 *   domain admin  list and get its own domain; patch its description only;
 *                 another domain is 404 (its existence does not leak);
 *                 create and delete are 403
 *   user          403 */
#ifndef AUTH_DOMAINS_H
#define AUTH_DOMAINS_H

#include "libcommon/svc.h"

void domains_routes(svc *s);

#endif
