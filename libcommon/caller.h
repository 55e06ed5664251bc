/* caller.h: the caller of a gateway-forwarded request, one struct for the
 * services that ask tessera-auth who calls them (the registry,
 * tessera-vfolder). Contract: caller_from_request reads X-Tessera-Caller
 * and X-Tessera-Caller-Access-Key (authctx_caller_of), asks tessera-auth for
 * that keypair's context (authctx_get; with a group, the context also
 * resolves that project) and takes it only when it is an active keypair of
 * that user, well formed; the user then goes into the thread's log context.
 * Every refusal is answered in resp before false is returned: 401 auth-failed
 * (no or bad caller, unknown key, not an active keypair of the caller),
 * 400/403 (the group), 503 (auth unreachable or answering an error).
 * caller_free releases what a successful call took. */
#ifndef TESSERA_CALLER_H
#define TESSERA_CALLER_H

#include "libcommon/authctx.h"

/* Names are up to 64 characters of UTF-8 (at most 4 bytes each), emails up
 * to 254 bytes; sizes include the NUL. */
#define CALLER_NAME_MAX (64 * 4 + 1)
#define CALLER_EMAIL_MAX (254 + 1)

typedef struct ts_caller {
    char user_id[TS_UUID_STRLEN];
    char access_key[24];
    char email[CALLER_EMAIL_MAX];
    char role[16]; /* "superadmin", "admin" (domain admin) or "user" */
    char domain_name[CALLER_NAME_MAX];
    json_t *ctx; /* auth's session context (owned): policies, projects, hosts */
} ts_caller;

bool caller_from_request(authctx *a, http_req *req, http_resp *resp, const char *group,
                         ts_caller *out) TS_MUST_CHECK;

/* The context of another keypair (the registry's owner_access_key), as
 * auth answers it: true with *ctx (the caller's). False after a problem: 404
 * (unknown key, no group), 400/403 (the group), 503; the context's own
 * verdict (caller_context_refusal) is the caller's to judge. */
bool caller_context(authctx *a, http_req *req, http_resp *resp, const char *access_key,
                    const char *group, json_t **ctx) TS_MUST_CHECK;

/* out from an accepted context of access_key; out owns ctx from here on.
 * For a service that resolves a keypair other than the caller's (the
 * registry's owner_access_key, tessera-vfolder's mount look-up). */
void caller_take_context(ts_caller *out, const char *access_key, json_t *ctx);

/* Why ctx cannot stand for user_id's keypair (NULL: it can; user_id NULL:
 * anyone's): malformed, not the user's, keypair or user inactive. */
const char *caller_context_refusal(const json_t *ctx, const char *user_id);

void caller_free(ts_caller *c);

bool caller_is_superadmin(const ts_caller *c) TS_MUST_CHECK;
/* A superadmin or a domain admin. */
bool caller_is_admin(const ts_caller *c) TS_MUST_CHECK;
/* Whether user_id is one of the superadmins of a domain admin's domain (the
 * context's "domain_superadmins"; docs/security.md: a domain admin never
 * sees or acts on a superadmin's things). False for any other caller. */
bool caller_hides_user(const ts_caller *c, const char *user_id) TS_MUST_CHECK;

#endif
