/* quota.h: usage accounting (the hooks are in folders.h: vf_quota_reserve,
 * vf_quota_release, vf_usage). Each folder has usage_bytes (and an optional
 * quota_bytes of its own); each quota scope ("user:<id>", "project:<id>") has
 * the sum of its folders' usage and a limit (the owner's user policy
 * max_quota_scope_size, or the project's project resource policy
 * max_quota_scope_size; 0 = unlimited). A reserve updates both rows in one
 * statement and keeps them only when neither passes its limit, so replicas
 * never overbook. Trashed folders keep counting until they are purged. */
#ifndef VFOLDER_QUOTA_H
#define VFOLDER_QUOTA_H

#include "caller.h"
#include "folders.h"

/* Create the scope row if missing and set its limit (limit < 0: leave the
 * limit as it is). On conn, inside or outside a transaction. */
bool vf_quota_scope_touch(PGconn *conn, const char *scope_id, int64_t limit,
                          ts_err *err) TS_MUST_CHECK;
/* The scope limit of f's owner as the caller's context tells it: the user
 * policy's for the caller's own folders, the project resource policy's for
 * the folders of a project the caller is a member of; -1 when the context
 * does not say (someone else's folder). */
int64_t vf_quota_scope_limit(const vf_caller *c, const vf_folder *f);
/* Bring f's scope limit up to date with the owner's policy (when the
 * context tells it; a failure is logged, the old limit stays). */
void vf_quota_scope_refresh(svc *s, const vf_caller *c, const vf_folder *f);
/* Charge bytes of an existing tree (clone) to a folder and its scope; the
 * same all-or-nothing check as vf_quota_reserve. */
vf_quota_rc vf_quota_charge(svc *s, const char *vfolder_id, int64_t bytes, const char *request_id,
                            ts_err *err) TS_MUST_CHECK;
/* A purged folder's usage leaves its scope. */
bool vf_quota_forget(PGconn *conn, const char *vfolder_id, ts_err *err) TS_MUST_CHECK;

#endif
