/* session_context.h: GET /v1/session-context?access_key=&group= for
 * tessera-registry (internal; not forwarded by the gateway). Everything the
 * registry needs to validate and enqueue a session, in one call:
 *
 *   {"access_key", "is_active", "is_admin",
 *    "user": {"id", "email", "username", "role", "status", "domain_name"},
 *    "domain": {"name", "is_active", "total_resource_slots", "idle_timeout"},
 *    "project": {"id", "name", "is_active", "is_member", "total_resource_slots",
 *                "idle_timeout"} | null,
 *    "keypair_policy": {"name", "total_resource_slots", "max_concurrent_sessions",
 *                       "max_containers_per_session", "max_pending_session_count",
 *                       "max_session_lifetime", "idle_timeout", "max_rootfs_size"},
 *    "user_total_resource_slots": {},
 *    "allowed_resource_groups": ["default", ...],
 *    "user_policy": {"name", "max_vfolder_count", "max_quota_scope_size"},
 *    "allowed_vfolder_hosts": {"keypair": {host: [perm, ...]}, "domain": {...}},
 *    "projects": [{"id", "name", "is_active", "allowed_vfolder_hosts"}, ...],
 *    "bootstrap_script": "...", "dotfiles": [{"path", "perm", "data"}, ...],
 *    "ssh_public_key": "..." | ""}
 *
 * (user_policy, allowed_vfolder_hosts and projects for tessera-vfolder:
 * folder limits, allowed volumes, and the projects the user is a member of;
 * "project" also carries its allowed_vfolder_hosts. The keypair's bootstrap
 * script, dotfiles and SSH public key go into its new sessions: user_config.h,
 * ssh_keypair.h).
 *
 * GET /v1/user-lookup?email= (tessera-vfolder's invitations and shares):
 * {"id", "email", "username", "role", "status", "domain_name", "projects":
 * [project ids]}; 404 when no user has that email (case-insensitive).
 *
 * group: a project name within the user's domain, or a project id; without
 * it "project" is null. A project that does not exist there: 404; one the user
 * is not a member of: 403, unless the user is a superadmin or an admin of
 * that domain. An unknown access key: 404. Inactive keys and users are
 * returned with their flags (the caller decides).
 *
 * Allowed resource groups: the union of the resource_group_access rows for
 * the user's domain, the project and the keypair; plus "default" for everyone
 * as long as no row names "default" at all (granting it to anyone makes it
 * explicit for all). Users have no slot totals of their own (their policy
 * holds vfolder limits): user_total_resource_slots is {}. */
#ifndef AUTH_SESSION_CONTEXT_H
#define AUTH_SESSION_CONTEXT_H

#include "libcommon/svc.h"

void session_context_routes(svc *s);

#endif
