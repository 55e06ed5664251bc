/* credentials.h: GET /v1/credentials/{access_key}, the gateway's cache fill:
 * the keypair with its secret and flags and its owner (docs/internal-api.md).
 * Inactive keypairs and users are returned too, with their flags. */
#ifndef AUTH_CREDENTIALS_H
#define AUTH_CREDENTIALS_H

#include "libcommon/svc.h"

void credentials_routes(svc *s);

#endif
