/* http_api.h: the gateway's public routes (Backend.AI-compatible, api-compat.md). */
#ifndef GATEWAY_HTTP_API_H
#define GATEWAY_HTTP_API_H

#include "gateway.h"

/* The API version clients read their major number from. */
#define GATEWAY_API_VERSION "v8.20240915"

void gateway_routes(gateway *gw);

#endif
