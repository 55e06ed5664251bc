/* caller.h: who calls the registry. The gateway forwards the verified
 * caller in X-Tessera-Caller (user id) and X-Tessera-Caller-Access-Key
 * (docs/internal-api.md); the registry owns no users, so it asks tessera-auth
 * for the keypair's context (role, domain, policy; libcommon/authctx.h
 * through auth_client.h, cached until an auth event or
 * registry.context_cache_ttl) on every call and checks that the keypair
 * belongs to that user and is active: the struct and its parse are
 * libcommon/caller.h's, caller_get binds them to the registry's auth client
 * (auth_client.h). */
#ifndef REGISTRY_CALLER_H
#define REGISTRY_CALLER_H

#include "libcommon/caller.h"
#include "libcommon/req_frame.h"
#include "registry.h"

/* Resolve the caller; with group, the context also resolves that project
 * (docs of GET /v1/session-context). False after a problem answer: 401 (no or
 * bad caller), 400/403/404 (group), 503 (auth unreachable). */
bool caller_get(http_req *req, http_resp *resp, const char *group, ts_caller *out) TS_MUST_CHECK;
/* The caller of an admin endpoint: administrators may read, only superadmins
 * may change (write); otherwise a 403 naming what ("images") is answered and
 * false returned. */
bool caller_get_admin(http_req *req, http_resp *resp, bool write, const char *what,
                      ts_caller *c) TS_MUST_CHECK;

/* One request served for a caller: the frame (libcommon/req_frame.h) and
 * the caller.
 *
 *     reg_req x;
 *     if (reg_req_begin(&x, ctx, req, resp, REQ_SUPERADMIN, "only superadmins may ...") &&
 *         req_frame_body(&x.fr, keys) && req_frame_conn(&x.fr)) {
 *         ... x.c, x.fr.body, x.fr.conn ...
 *     }
 *     reg_req_end(&x);
 */
typedef struct reg_req {
    req_frame fr;
    ts_caller c;
} reg_req;

/* The frame, the caller (caller_get, without a group) and its role against
 * need (403 saying refusal). False after the problem answer; reg_req_end
 * releases either way. */
bool reg_req_begin(reg_req *x, void *ctx, http_req *req, http_resp *resp, req_need need,
                   const char *refusal) TS_MUST_CHECK;
void reg_req_end(reg_req *x);

/* Whether a keypair context (caller_get's ctx, context_get's) is a
 * superadmin's. */
bool context_is_superadmin(const json_t *ctx) TS_MUST_CHECK;

/* The users whose things the caller may not see although they are in its
 * reach: for a domain admin, its domain's superadmins (the context's
 * "domain_superadmins"; docs/security.md: a domain admin never sees or acts
 * on a superadmin's things); nobody for anyone else. A uuid[] literal for a
 * query's "NOT (user_id = ANY($n::uuid[]))" (heap, never NULL). */
char *caller_hidden_users(const ts_caller *c);

/* The context of another keypair (owner_access_key): caller_context
 * (libcommon/caller.h) through the registry's auth client. */
bool context_get(http_req *req, http_resp *resp, const char *access_key, const char *group,
                 json_t **ctx) TS_MUST_CHECK;

#endif
