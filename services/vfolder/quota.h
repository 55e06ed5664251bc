/* quota.h: usage accounting. Each folder has usage_bytes (and an optional
 * quota_bytes of its own); each quota scope ("user:<id>", "project:<id>") has
 * the sum of its folders' usage and a limit (the owner's user policy
 * max_quota_scope_size, or the project's project resource policy
 * max_quota_scope_size; 0 = unlimited). A reserve updates both rows in one
 * statement and keeps them only when neither passes its limit, so replicas
 * never overbook. Trashed folders keep counting until they are purged.
 *
 * Before writing N new bytes into a folder, vf_quota_reserve(s, &f, N, &err);
 * on VF_QUOTA_EXCEEDED answer vf_quota_problem (412) and write nothing. When
 * bytes go away (delete, truncate, an aborted upload that had reserved), call
 * vf_quota_release(s, &f, N). Usage is our own accounting in PostgreSQL, the
 * same on every replica; XFS project quotas, where the volume supports them,
 * are a second fence set by volumes.c. */
#ifndef VFOLDER_QUOTA_H
#define VFOLDER_QUOTA_H

#include "caller.h"
#include "folders.h"

typedef enum vf_quota_rc {
    VF_QUOTA_OK = 0,
    VF_QUOTA_EXCEEDED = 1, /* nothing reserved; QuotaExceeded was published */
    VF_QUOTA_ERROR = 2,    /* database trouble: err says what */
} vf_quota_rc;

/* Reserve bytes (> 0) against the folder's quota and its scope's, atomically
 * (all or nothing, safe across replicas). */
vf_quota_rc vf_quota_reserve(svc *s, const vf_folder *f, int64_t bytes, ts_err *err) TS_MUST_CHECK;
/* Give back bytes (never below zero); errors are logged. */
void vf_quota_release(svc *s, const vf_folder *f, int64_t bytes);
/* Current usage and limit (0 = unlimited) of the folder; scope_* for its
 * quota scope (may be NULL). */
bool vf_usage(svc *s, const vf_folder *f, int64_t *used, int64_t *limit, int64_t *scope_used,
              int64_t *scope_limit, ts_err *err) TS_MUST_CHECK;
/* The answer for a failed reserve: 412 quota-exceeded or 500. */
void vf_quota_problem(http_resp *resp, vf_quota_rc rc, const vf_folder *f, int64_t bytes,
                      const ts_err *err);

/* Create the scope row if missing and set its limit (limit < 0: leave the
 * limit as it is). On conn, inside or outside a transaction. */
bool vf_quota_scope_touch(PGconn *conn, const char *scope_id, int64_t limit,
                          ts_err *err) TS_MUST_CHECK;
/* The scope limit of f's owner as the caller's context tells it: the user
 * policy's for the caller's own folders, the project resource policy's for
 * the folders of a project the caller is a member of; -1 when the context
 * does not say (someone else's folder). */
int64_t vf_quota_scope_limit(const ts_caller *c, const vf_folder *f);
/* Bring f's scope limit up to date with the owner's policy (when the
 * context tells it; a failure is logged, the old limit stays). */
void vf_quota_scope_refresh(svc *s, const ts_caller *c, const vf_folder *f);
/* Charge bytes of an existing tree (clone) to a folder and its scope; the
 * same all-or-nothing check as vf_quota_reserve. */
vf_quota_rc vf_quota_charge(svc *s, const char *vfolder_id, int64_t bytes, const char *request_id,
                            ts_err *err) TS_MUST_CHECK;
/* A purged folder's usage leaves its scope. */
bool vf_quota_forget(PGconn *conn, const char *vfolder_id, ts_err *err) TS_MUST_CHECK;

#endif
