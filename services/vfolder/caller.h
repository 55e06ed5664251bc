/* caller.h: who calls tessera-vfolder (ts_caller, libcommon/caller.h) and what the
 * policies let it do with volumes. The gateway forwards the verified caller
 * in X-Tessera-Caller and X-Tessera-Caller-Access-Key; we own no users, so
 * each request asks tessera-auth's GET /v1/session-context for the keypair's
 * current context (role, domain, projects, user policy, allowed hosts),
 * through libcommon/authctx.h: with vfolder.context_cache_ttl > 0 (0 by
 * default) the answers are cached and dropped on tessera.auth.v1 events.
 * vf_caller_get puts the user in the log context. */
#ifndef VFOLDER_CALLER_H
#define VFOLDER_CALLER_H

#include "context.h"
#include "libcommon/caller.h"
#include "libcommon/svc.h"

#include <jansson.h>

/* From the request headers. False after a problem answer: 401 (no or bad
 * caller, inactive key or user, key not the user's), 503 (auth unreachable). */
bool vf_caller_get(svc *s, http_req *req, http_resp *resp, ts_caller *out) TS_MUST_CHECK;
/* Superadmin, or an admin of that domain. */
bool vf_caller_admin_of(const ts_caller *c, const char *domain_name) TS_MUST_CHECK;
/* As vf_caller_admin_of, for a folder of that domain owned by user
 * owner_user_id (NULL: a project's): a domain admin is no admin over a
 * superadmin's folder (auth's context lists the domain's superadmins). */
bool vf_caller_admin_over(const ts_caller *c, const char *domain_name,
                          const char *owner_user_id) TS_MUST_CHECK;
/* Is the caller a member of the project (id)? From the context's "projects". */
bool vf_caller_in_project(const ts_caller *c, const char *project_id) TS_MUST_CHECK;

/* vfolder.context_cache_ttl, vfolder.context_cache_entries. */
extern const cfg_option vf_caller_options[];

/* The cache and its consumer (when vfolder.context_cache_ttl > 0), metrics
 * tessera_vfolder_context_cache_* and tessera_vfolder_auth_events_total. */
bool vf_caller_start(svc *s, ts_err *err) TS_MUST_CHECK;
void vf_caller_stop(void);

/* The context of an access key (mount resolution: the registry names the
 * session owner's key). Same answers as vf_caller_get, without the header
 * check; 404 from auth becomes 404 "unknown access key". */
bool vf_caller_for_key(svc *s, http_req *req, http_resp *resp, const char *access_key,
                       ts_caller *out) TS_MUST_CHECK;

/* Backend.AI host permission names (allowed_vfolder_hosts values). */
#define VF_HOST_CREATE "create-vfolder"
#define VF_HOST_MODIFY "modify-vfolder"
#define VF_HOST_DELETE "delete-vfolder"
#define VF_HOST_MOUNT "mount-in-session"
#define VF_HOST_UPLOAD "upload-file"
#define VF_HOST_DOWNLOAD "download-file"
#define VF_HOST_INVITE "invite-others"
#define VF_HOST_SET_PERM "set-user-specific-permission"

/* The caller's allowed hosts: {host: [perm, ...]}, the union of the keypair
 * policy's, the domain's and (project_hosts, may be NULL) the project's.
 * When no policy names any host and vfolder.open_hosts is on, every
 * configured volume with every permission. New reference. */
json_t *vf_caller_allowed_hosts(const ts_caller *c, const json_t *project_hosts);
/* May the caller do perm_name on host? (superadmins: always.) */
bool vf_caller_host_allows(const ts_caller *c, const json_t *project_hosts, const char *host,
                           const char *perm_name) TS_MUST_CHECK;
/* The member project of the context by id (NULL when not a member). */
const json_t *vf_caller_project(const ts_caller *c, const char *project_id);
/* The user policy's limits (0 = unlimited). */
int64_t vf_caller_max_vfolder_count(const ts_caller *c);
int64_t vf_caller_max_quota_scope_size(const ts_caller *c);

/* tessera-auth's GET /v1/user-lookup?email=: *status 200 with *out the user
 * ({"id", "email", "domain_name", "status", "projects": [ids]}), 404, or 0
 * when auth did not answer (err says why). */
bool vf_user_lookup(const char *email, const char *request_id, long *status, json_t **out,
                    ts_err *err) TS_MUST_CHECK;

/* tessera-auth's session context of access_key with ?group= (an admin's view
 * of a project it is not a member of): *status and the body, as
 * vf_user_lookup. */
bool vf_auth_project(const char *access_key, const char *group, const char *request_id,
                     long *status, json_t **out, ts_err *err) TS_MUST_CHECK;

#endif
