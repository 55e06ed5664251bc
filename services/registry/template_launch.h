/* template_launch.h: POST /v1/sessions/_/create-from-template (Backend.AI's
 * POST /session/_/create-from-template): {"template_id", then any field of
 * POST /v1/sessions}. The template (session_templates.h: one the caller may
 * reach, else 404) is merged with the body as template_spec_merge says, and
 * the result is created exactly as POST /v1/sessions creates
 * (session_create_reply): the same answer (201 {"sessionId", "sessionUuid",
 * "status", ...}) and the same problems. The session's owner is the caller
 * (or owner_access_key, administrators), not the template's owner. */
#ifndef REGISTRY_TEMPLATE_LAUNCH_H
#define REGISTRY_TEMPLATE_LAUNCH_H

#include "libcommon/svc.h"

void template_launch_routes(svc *s);

#endif
