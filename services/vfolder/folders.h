/* folders.h: the folder model of tessera-vfolder: permission levels, a
 * folder as the caller sees it (vfolder.vfolders and the caller's row in
 * vfolder.permissions), finding one by name or id, and its JSON answer.
 * Every handler that works on a folder begins here (request.h wraps the
 * steps):
 *
 *     ts_caller c;
 *     if (!vf_caller_get(s, req, resp, &c)) return;          // 401/503 sent
 *     vf_folder f;
 *     if (!vf_resolve(s, &c, http_param(req, "name"), VF_PERM_RW, &f, resp)) {
 *         caller_free(&c);                                 // 404/403 sent
 *         return;
 *     }
 *     ... work under f.host_path (confined: files.h) ...
 *     caller_free(&c);
 *
 * The model reads folders; it changes none. Creating, trashing, sharing and
 * accounting are the modules above it (folder_create.c, trash.c,
 * sharing.c, quota.c). */
#ifndef VFOLDER_FOLDERS_H
#define VFOLDER_FOLDERS_H

#include "caller.h"
#include "context.h"
#include "libcommon/svc.h"

#include <jansson.h>
#include <libpq-fe.h>

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
bool vf_resolve(svc *s, const ts_caller *caller, const char *name_or_id, vf_perm need,
                vf_folder *out, http_resp *resp) TS_MUST_CHECK;
/* The same for a folder in the trash, by id, that the caller owns or
 * administers (purge, restore). */
bool vf_resolve_trashed(svc *s, const ts_caller *caller, const char *id, vf_folder *out,
                        http_resp *resp) TS_MUST_CHECK;

/* A ready folder by id with no caller (token-authorized transfers): perm is
 * VF_PERM_OWNER. False when absent or not ready (err says which). */
bool vf_folder_by_id(svc *s, const char *id, vf_folder *out, ts_err *err) TS_MUST_CHECK;
/* The row of folder id in any status, on conn (inside the transaction that
 * made it): perm is VF_PERM_OWNER. False after a problem answer. */
bool vf_folder_read(PGconn *conn, http_resp *resp, const char *id, vf_folder *out) TS_MUST_CHECK;

/* The JSON answer for folder id (create, clone, info) as the caller sees
 * it; NULL after a problem answer. */
json_t *vf_folder_json(svc *s, const ts_caller *caller, const char *id, http_resp *resp);
/* The ready folders the caller sees (GET /folders): its own, those shared
 * with it, its projects'; all: every folder of the domain it administers
 * (all of them for a superadmin) but its superadmins' user folders;
 * project_id (may be NULL): only that project's; trash: those in the trash
 * instead of the ready ones (not the folders shared with it: their owners
 * restore or purge them). A JSON array; NULL after a problem
 * answer. */
json_t *vf_folder_list(svc *s, const ts_caller *caller, bool all, const char *project_id,
                       bool trash, http_resp *resp);

/* A project folder's project policy hosts as the caller's context has them
 * (allowed_vfolder_hosts; NULL for a user folder or a project the caller is
 * not a member of). */
const json_t *vf_folder_project_hosts(const ts_caller *caller, const vf_folder *f);

/* A folder name (1..64 code points; no '/', '\\', control characters,
 * "."/"..", "_", edge spaces or reserved home-directory names). False after
 * a 400 naming field. */
bool vf_name_ok(const char *name, const char *field, http_resp *resp) TS_MUST_CHECK;

#endif
