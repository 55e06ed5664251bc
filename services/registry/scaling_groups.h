/* scaling_groups.h: the resource groups a caller may use (Backend.AI's
 * "scaling groups"), for the launcher.
 *
 *   GET /v1/scaling-groups?group=<project name or id>   (also group_id, group_name)
 *   -> {"scaling_groups": [{"name": ...}, ...]}  ordered by name
 *
 * Allowed: tessera-auth's allowed_resource_groups for the caller's keypair,
 * its domain and the project (services/auth/session_context.h), of those the
 * active ones (registry.resource_groups.is_active). Without a project only
 * the keypair's and the domain's count (Backend.AI requires the project; we
 * do not). A project unknown in the caller's domain: 404; one the caller is
 * not a member of: 403 (superadmins and that domain's admins may name any). */
#ifndef REGISTRY_SCALING_GROUPS_H
#define REGISTRY_SCALING_GROUPS_H

#include "caller.h"

void scaling_groups_routes(svc *s);

/* The caller's context for project group (NULL or "": *ctx is a new
 * reference to c's own context). false after a problem answer: 404 unknown
 * project, 403 not a member, 400 a malformed name, 503 auth unreachable. */
bool scaling_groups_context(http_req *req, http_resp *resp, const ts_caller *c, const char *group,
                            json_t **ctx) TS_MUST_CHECK;

/* The active resource groups the context allows, ordered by name: a JSON
 * array of names (new reference), or NULL after a problem answer. */
json_t *scaling_groups_allowed(PGconn *conn, http_resp *resp, const json_t *ctx);

#endif
