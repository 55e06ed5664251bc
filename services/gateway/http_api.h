/* http_api.h: the gateway's public routes (Backend.AI-compatible, api-compat.md). */
#ifndef GATEWAY_HTTP_API_H
#define GATEWAY_HTTP_API_H

#include "gateway.h"

/* The API version clients read their major number from. */
#define GATEWAY_API_VERSION "v8.20240915"
/* The Backend.AI manager release whose API that is: GET / answers
 * "manager": GATEWAY_MANAGER_COMPAT "+tessera." TESSERA_VERSION, so that
 * clients comparing the manager's version enable the features of that API
 * (docs/api.md "Versions" says why, and what is not served). */
#define GATEWAY_MANAGER_COMPAT "24.09.0"

void gateway_routes(gateway *gw);

#endif
