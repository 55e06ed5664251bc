/* session_templates.h: Backend.AI's session templates and the launch from
 * one, forwarded to tessera-registry (services/registry/session_templates.h,
 * template_launch.h; docs/sessions.md "Templates"). Signed, like every
 * session route (so also under the console's /func):
 *
 *   *    /template/session[/{id}]          -> /v1/session-templates[/{id}]?<query>
 *   POST /session/_/create-from-template   -> POST /v1/sessions/_/create-from-template
 *        (also under /kernel; the body must be a JSON object; the upstream
 *        time limit is a create's, sessions_create_timeout_ms) */
#ifndef GATEWAY_SESSION_TEMPLATES_H
#define GATEWAY_SESSION_TEMPLATES_H

#include "gateway.h"

void session_templates_routes(gateway *gw);

#endif
