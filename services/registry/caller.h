/* caller.h: who calls the registry. The gateway forwards the verified
 * caller in X-Tessera-Caller (user id) and X-Tessera-Caller-Access-Key
 * (docs/internal-api.md); the registry owns no users, so it asks tessera-auth
 * for the keypair's context (role, domain, policy; libcommon/authctx.h
 * through auth_client.h, cached until an auth event or
 * registry.context_cache_ttl) on every call and checks that the keypair
 * belongs to that user and is active. caller_get puts the user in the log
 * context. */
#ifndef REGISTRY_CALLER_H
#define REGISTRY_CALLER_H

#include "registry.h"

typedef struct reg_caller {
    char user_id[TS_UUID_STRLEN];
    char access_key[24];
    char role[16]; /* superadmin, admin, user */
    char domain[260];
    json_t *ctx; /* auth's session context (owned) */
} reg_caller;

/* Resolve the caller; with group, the context also resolves that project
 * (docs of GET /v1/session-context). False after a problem answer: 401 (no or
 * bad caller), 400/403/404 (group), 503 (auth unreachable). */
bool caller_get(http_req *req, http_resp *resp, const char *group, reg_caller *out) TS_MUST_CHECK;
void caller_free(reg_caller *c);

bool caller_is_superadmin(const reg_caller *c) TS_MUST_CHECK;
/* superadmin or domain admin */
bool caller_is_admin(const reg_caller *c) TS_MUST_CHECK;
/* The caller of an admin endpoint: administrators may read, only superadmins
 * may change (write); otherwise a 403 naming what ("images") is answered and
 * false returned. */
bool caller_get_admin(http_req *req, http_resp *resp, bool write, const char *what,
                      reg_caller *c) TS_MUST_CHECK;

/* Whether a keypair context (caller_get's ctx, context_get's) is a
 * superadmin's. */
bool context_is_superadmin(const json_t *ctx) TS_MUST_CHECK;

/* The users whose things the caller may not see although they are in its
 * reach: for a domain admin, its domain's superadmins (the context's
 * "domain_superadmins"; docs/security.md: a domain admin never sees or acts
 * on a superadmin's things); nobody for anyone else. A uuid[] literal for a
 * query's "NOT (user_id = ANY($n::uuid[]))" (heap, never NULL). */
char *caller_hidden_users(const reg_caller *c);
/* Whether user_id is one of those. */
bool caller_hides_user(const reg_caller *c, const char *user_id) TS_MUST_CHECK;

/* The context of another keypair (owner_access_key), same answers as caller_get. */
bool context_get(http_req *req, http_resp *resp, const char *access_key, const char *group,
                 json_t **ctx) TS_MUST_CHECK;

#endif
