/* session_relay.h: POST /v1/sessions/{name-or-id}/execute, GET .../logs and
 * POST .../apps/{app}/start, and files (POST .../upload, GET|POST
 * .../download and .../download_single, GET .../files), relayed to the agent that runs the
 * session's main kernel (its internal HTTP API, docs/internal-api.md); the session is found as
 * sessions.h's handlers find it. */
#ifndef REGISTRY_SESSION_RELAY_H
#define REGISTRY_SESSION_RELAY_H

#include "libcommon/svc.h"

void session_relay_routes(svc *s);

#endif
