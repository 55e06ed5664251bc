/* http_api.h: tessera-registry's routes. */
#ifndef REGISTRY_HTTP_API_H
#define REGISTRY_HTTP_API_H

#include "libcommon/svc.h"

void registry_routes(svc *s);

#endif
