/* folders.h: the contract of tessera-vfolder's folder core, shared by the
 * metadata half (folders.c, caller.c, quota.c, volumes.c, sharing.c, events.c)
 * and the files/transfer half (files*.c, transfer*.c, tus*.c, tokens*.c).
 *
 * A request handler that touches a folder's files does:
 *
 *     vf_caller c;
 *     if (!vf_caller_get(s, req, resp, &c)) return;          // 401/503 sent
 *     vf_folder f;
 *     if (!vf_resolve(s, &c, http_param(req, "name"), VF_PERM_RW, &f, resp)) {
 *         vf_caller_free(&c);                                 // 404/403 sent
 *         return;
 *     }
 *     ... work under f.host_path (confined: openat2 RESOLVE_BENEATH) ...
 *     vf_caller_free(&c);
 *
 * Quota: before writing N new bytes, vf_quota_reserve(s, &f, N, &err); on
 * VF_QUOTA_EXCEEDED answer vf_quota_problem (412) and write nothing. When bytes
 * go away (delete, truncate, an aborted upload that had reserved), call
 * vf_quota_release(s, &f, N). Usage is our own accounting in PostgreSQL (per
 * folder and per quota scope), the same on every replica; XFS project quotas,
 * where the volume supports them, are a second fence set by volumes.c. */
#ifndef VFOLDER_FOLDERS_H
#define VFOLDER_FOLDERS_H

#include "libcommon/svc.h"

#include <jansson.h>

/* Sizes including the NUL. Folder names: 1..64 code points of UTF-8. */
#define VF_NAME_MAX (64 * 4 + 1)
#define VF_EMAIL_MAX (254 + 1)
#define VF_HOST_MAX 65
#define VF_PATH_MAX 4096

/* Permission levels, ordered: a level includes every level below it.
 * ro: read; rw: read and write; wd: read, write and delete (Backend.AI's
 * names); owner: all of those plus rename, delete, invite, share. */
typedef enum vf_perm {
    VF_PERM_NONE = 0,
    VF_PERM_RO = 1,
    VF_PERM_RW = 2,
    VF_PERM_WD = 3,
    VF_PERM_OWNER = 4,
} vf_perm;

const char *vf_perm_name(vf_perm p); /* "ro" "rw" "wd" "owner" ("none") */
/* "ro"|"rw"|"wd" (and "owner" when allow_owner) -> level; NONE when unknown. */
vf_perm vf_perm_parse(const char *s, bool allow_owner);

typedef enum vf_ownership {
    VF_OWNER_USER = 0,
    VF_OWNER_PROJECT = 1, /* Backend.AI calls it "group" on the wire */
} vf_ownership;

/* The caller of a forwarded request: X-Tessera-Caller (user id) and
 * X-Tessera-Caller-Access-Key, resolved through tessera-auth's
 * GET /v1/session-context on every request (we own no users). */
typedef struct vf_caller {
    char user_id[TS_UUID_STRLEN];
    char access_key[24];
    char email[VF_EMAIL_MAX];
    char role[16]; /* "superadmin", "admin" (domain admin) or "user" */
    char domain_name[VF_NAME_MAX];
    json_t *ctx; /* auth's session context (owned): projects, policies, hosts */
} vf_caller;

/* From the request headers. False after a problem answer: 401 (no or bad
 * caller, inactive key or user, key not the user's), 503 (auth unreachable). */
bool vf_caller_get(svc *s, http_req *req, http_resp *resp, vf_caller *out) TS_MUST_CHECK;
void vf_caller_free(vf_caller *c);
bool vf_caller_is_superadmin(const vf_caller *c);
/* Superadmin, or an admin of that domain. */
bool vf_caller_admin_of(const vf_caller *c, const char *domain_name);
/* As vf_caller_admin_of, for a folder of that domain owned by user
 * owner_user_id (NULL: a project's): a domain admin is no admin over a
 * superadmin's folder (auth's context lists the domain's superadmins). */
bool vf_caller_admin_over(const vf_caller *c, const char *domain_name, const char *owner_user_id);
/* Is the caller a member of the project (id)? From the context's "projects". */
bool vf_caller_in_project(const vf_caller *c, const char *project_id);

typedef struct vf_folder {
    char id[TS_UUID_STRLEN];
    char name[VF_NAME_MAX];
    char host[VF_HOST_MAX];      /* volume name ("local") */
    char host_path[VF_PATH_MAX]; /* absolute directory of the folder's files */
    vf_ownership ownership;
    char owner_id[TS_UUID_STRLEN]; /* user id or project id */
    char domain_name[VF_NAME_MAX];
    char quota_scope[64]; /* "user:<uuid>" or "project:<uuid>" */
    char usage_mode[16];  /* "general" | "data" | "model" */
    vf_perm folder_perm;  /* the folder's own permission (ro|rw|wd) */
    bool cloneable;
    int64_t quota_bytes; /* per-folder limit; 0 = none (the scope's applies) */
    vf_perm perm;        /* the caller's effective permission */
    bool via_admin;      /* perm comes only from being an admin */
} vf_folder;

/* Find a ready folder the caller can see by name (the caller's own first,
 * then shared/invited, then its projects') or by id, and check that the
 * caller's effective permission is at least `need`. False after a problem
 * answer: 404 vfolder-not-found (absent, or invisible to the caller), 403
 * forbidden (visible but not enough permission), 500/503. */
bool vf_resolve(svc *s, const vf_caller *caller, const char *name_or_id, vf_perm need,
                vf_folder *out, http_resp *resp) TS_MUST_CHECK;

/* A ready folder by id with no caller (token-authorized transfers): perm is
 * VF_PERM_OWNER. False when absent or not ready (err says which). */
bool vf_folder_by_id(svc *s, const char *id, vf_folder *out, ts_err *err) TS_MUST_CHECK;

/* ---- quota accounting (quota.c) --------------------------------------- */

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

/* ---- the files half plugs in here ------------------------------------- */

/* Provided by files_routes.c (the files/transfer half): registers
 * /v1/folders/{name}/files, mkdir, rename_file, delete_files,
 * request-upload, request-download and the tus/download endpoints. Called by
 * http_api.c after the metadata routes. */
void vf_files_routes(svc *s);
/* Provided by files_routes.c: its config options (terminated by {0}); main.c
 * appends them to the service's table, so they appear in --help and in
 * docs/configuration.md's "tessera-vfolder" section. */
extern const cfg_option vf_files_options[];
/* Provided by files_routes.c: background work after the service connected
 * (sweep expired uploads); may be a no-op. */
bool vf_files_start(svc *s, ts_err *err) TS_MUST_CHECK;
void vf_files_stop(svc *s);

/* ---- shared config (main.c) ------------------------------------------ */

typedef struct vf_config {
    char *volumes;      /* "name:path[,name:path]" */
    char *default_host; /* "local" */
    bool open_hosts;    /* no policy names a host: every volume is allowed */
    char *auth_url;     /* tessera-auth base URL */
    int64_t auth_timeout_ms;
    int64_t trash_retention_ms; /* trashed folders older than this are purged */
    int64_t sweep_interval_ms;
    char *registry_url; /* tessera-registry base URL (who mounts a folder) */
    int64_t registry_timeout_ms;
} vf_config;
extern vf_config vf_cfg;

/* PostgreSQL for handlers, as libcommon/pgjson.h: pgjson_get / pgjson_put. */

#endif
