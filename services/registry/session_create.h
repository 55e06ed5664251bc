/* session_create.h: POST /v1/sessions, the create (docs/sessions.md, body as
 * Backend.AI's POST /session): checked against the owner's context from
 * tessera-auth (policy, project and domain limits, allowed resource groups),
 * the resource group, the image (registered on first use when
 * registry.auto_register_images), the vfolder mounts (tessera-vfolder) and
 * the largest agent of the group; stored PENDING, announced with
 * SessionEnqueued, then awaited up to maxWaitSeconds unless enqueueOnly. */
#ifndef REGISTRY_SESSION_CREATE_H
#define REGISTRY_SESSION_CREATE_H

#include "libcommon/svc.h"

void session_create_routes(svc *s);

/* The create of a parsed body (a JSON object, the caller's; not kept),
 * answered in resp as POST /v1/sessions answers it: the same checks, the
 * same answer and the same problems. The create-from-template route
 * (template_launch.h) calls it with the template merged into the body. */
void session_create_reply(svc *s, http_req *req, http_resp *resp, json_t *body);

#endif
