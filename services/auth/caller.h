/* caller.h: who is calling. The gateway verifies the signature and forwards
 * the user id in X-Tessera-Caller; we read that user's role, domain and
 * status from our own tables on every call (docs/internal-api.md) and decide
 * scoping from them. The rules are docs/api.md "Admin REST". */
#ifndef AUTH_CALLER_H
#define AUTH_CALLER_H

#include "libcommon/svc.h"

/* Sizes in bytes including the NUL: names are up to 64 characters of UTF-8
 * (at most 4 bytes each), emails up to 254 bytes. */
#define AUTH_NAME_MAX (64 * 4 + 1)
#define AUTH_EMAIL_MAX (254 + 1)

typedef struct auth_caller {
    char user_id[TS_UUID_STRLEN];
    char email[AUTH_EMAIL_MAX];
    char username[AUTH_NAME_MAX];
    char role[16];   /* "superadmin", "admin" or "user" */
    char status[16]; /* always "active" after caller_resolve */
    char domain_name[AUTH_NAME_MAX];
    char access_key[21]; /* X-Tessera-Caller-Access-Key, or "" */
} auth_caller;

/* Resolve X-Tessera-Caller to the user's current row on conn (its id then
 * goes into the thread's log context, tlog_ctx_user). False (and a
 * 401 auth-failed problem already sent) when the header is missing or not a
 * UUID, the user does not exist or is not active; a database error sends a
 * 500 problem. */
bool caller_resolve(PGconn *conn, http_req *req, http_resp *resp, auth_caller *out) TS_MUST_CHECK;

/* The caller signed with an access key (X-Tessera-Caller-Access-Key): the
 * per-keypair settings (user config, SSH keypair) are that key's. False after
 * a 401 when the gateway sent none. */
bool caller_has_access_key(const auth_caller *c, http_resp *resp) TS_MUST_CHECK;

/* Scoping rules (docs/api.md "Admin REST"). */
bool caller_is_superadmin(const auth_caller *c) TS_MUST_CHECK;
/* A superadmin or a domain admin. */
bool caller_is_admin(const auth_caller *c) TS_MUST_CHECK;
/* Superadmin: any domain; admin and user: their own domain only. */
bool caller_can_see_domain(const auth_caller *c, const char *domain_name) TS_MUST_CHECK;
/* Superadmin: any domain; admin: its own domain; user: never. */
bool caller_can_manage_domain(const auth_caller *c, const char *domain_name) TS_MUST_CHECK;
/* May the caller read the user (id, domain, role)? Superadmin: all; admin:
 * users of its domain that are not superadmins; user: only itself. */
bool caller_can_see_user(const auth_caller *c, const char *user_id, const char *user_domain,
                         const char *user_role) TS_MUST_CHECK;
/* May the caller change the user as an administrator (role, status, domain,
 * password, policy)? Superadmin: all; admin: non-superadmins of its domain
 * (itself included); user: never (users edit their own profile fields only).
 * user_role NULL counts as unknown: only a superadmin may then. */
bool caller_can_manage_user(const auth_caller *c, const char *user_domain,
                            const char *user_role) TS_MUST_CHECK;

#endif
