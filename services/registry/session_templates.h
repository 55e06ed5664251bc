/* session_templates.h: session templates (Backend.AI's /template/session;
 * table registry.session_templates, migration 0007; the format is
 * template_spec.h). The gateway forwards /template/session[/{id}] here.
 *
 *   POST   /v1/session-templates  {"payload", "group"? (also group_name,
 *          groupName; default "default"), "group_id"?, "domain"?,
 *          "owner_access_key"?}  200 [{"id", "user"}]
 *          payload: JSON text or JSON itself: a list of {"template", "name"?,
 *          "group_id"?}, one such object, or one template. YAML (which
 *          Backend.AI also takes) is refused. At most 16 templates a call,
 *          each at most TEMPLATE_MAX_BYTES; an owner keeps at most 200.
 *   GET    /v1/session-templates?all=&group_id=
 *          [{"name", "id", "created_at", "is_owner", "user", "group",
 *            "user_email", "group_name", "domain_name", "type": "task",
 *            "template"}], newest first: the caller's own; with all=true
 *          also what an administrator may reach (below)
 *   GET    /v1/session-templates/{id}?format=json
 *          {"id", "template", "name", "user_uuid", "group_id", "domain_name"}
 *   PUT    /v1/session-templates/{id}  {"payload" (one template), "group"?,
 *          "group_id"?}  {"success": true}
 *   DELETE /v1/session-templates/{id}  {"success": true}
 *
 * Ids are answered as Backend.AI answers them (32 hex digits); either form
 * of a UUID is taken. Who reaches a template: its owner; a domain admin those
 * of its domain but not its superadmins'; a superadmin all. Anything else,
 * like an unknown id, is 404 (a template's existence does not leak). The
 * owner is the caller, or owner_access_key's keypair (administrators, within
 * the rules of POST /v1/sessions); the project (group_id or group) must be
 * one the owner may use (tessera-auth's session context says). */
#ifndef REGISTRY_SESSION_TEMPLATES_H
#define REGISTRY_SESSION_TEMPLATES_H

#include "caller.h"
#include "libcommon/svc.h"

void session_templates_routes(svc *s);

/* The template id (either UUID form) the caller may reach, as
 * {"template", "project_name", "name", ...}; NULL after a problem answer
 * (404 for one it may not reach, 400 for an id that is not a UUID). */
json_t *session_templates_find(PGconn *conn, http_resp *resp, const ts_caller *c, const char *id);

#endif
