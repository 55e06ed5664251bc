/* folders.c: folder resolution and permissions (folders.h), and the folder
 * metadata endpoints: create, list, hosts, volumes, info, delete (to the
 * trash), purge, restore, rename, clone, and mount resolution for the
 * registry (docs/vfolders.md). */
#include "caller.h"
#include "events.h"
#include "http_api.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "mount_guard.h"
#include "quota.h"
#include "volumes.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- permissions ------------------------------------------------------------ */

const char *vf_perm_name(vf_perm p)
{
    switch (p) {
    case VF_PERM_RO:
        return "ro";
    case VF_PERM_RW:
        return "rw";
    case VF_PERM_WD:
        return "wd";
    case VF_PERM_OWNER:
        return "owner";
    default:
        return "none";
    }
}

vf_perm vf_perm_parse(const char *s, bool allow_owner)
{
    if (!s) return VF_PERM_NONE;
    if (strcmp(s, "ro") == 0) return VF_PERM_RO;
    if (strcmp(s, "rw") == 0) return VF_PERM_RW;
    if (strcmp(s, "wd") == 0) return VF_PERM_WD;
    if (allow_owner && strcmp(s, "owner") == 0) return VF_PERM_OWNER;
    return VF_PERM_NONE;
}

/* ---- rows ------------------------------------------------------------------------ */

/* The columns every folder query selects, in this order (C_* below); p is
 * the caller's row in vfolder.permissions (LEFT JOIN). */
#define FCOLS                                                                                      \
    " v.id::text, v.name, v.host, v.ownership_type, v.user_id::text, v.group_id::text,"            \
    " v.domain_name, v.usage_mode, v.permission, v.cloneable, v.status, v.quota_bytes,"            \
    " v.usage_bytes, v.quota_scope_id, v.created_at, v.creator_id::text, p.perm"
enum {
    C_ID,
    C_NAME,
    C_HOST,
    C_OWNERSHIP,
    C_USER,
    C_GROUP,
    C_DOMAIN,
    C_MODE,
    C_PERM,
    C_CLONEABLE,
    C_STATUS,
    C_QUOTA,
    C_USAGE,
    C_SCOPE,
    C_CREATED,
    C_CREATOR,
    C_SHARED,
};
#define FJOIN                                                                                      \
    " FROM vfolder.vfolders v LEFT JOIN vfolder.permissions p"                                     \
    " ON p.vfolder_id = v.id AND p.user_id = $1::uuid"

static const char *_v(const PGresult *r, int i, int c)
{
    return PQgetisnull(r, i, c) ? NULL : PQgetvalue(r, i, c);
}

static void _row_folder(const PGresult *r, int i, vf_folder *f)
{
    memset(f, 0, sizeof(*f));
    ts_strlcpy(f->id, _v(r, i, C_ID), sizeof(f->id));
    ts_strlcpy(f->name, _v(r, i, C_NAME), sizeof(f->name));
    ts_strlcpy(f->host, _v(r, i, C_HOST), sizeof(f->host));
    f->ownership = strcmp(_v(r, i, C_OWNERSHIP), "group") == 0 ? VF_OWNER_PROJECT : VF_OWNER_USER;
    const char *owner = _v(r, i, f->ownership == VF_OWNER_USER ? C_USER : C_GROUP);
    ts_strlcpy(f->owner_id, owner ? owner : "", sizeof(f->owner_id));
    ts_strlcpy(f->domain_name, _v(r, i, C_DOMAIN), sizeof(f->domain_name));
    ts_strlcpy(f->quota_scope, _v(r, i, C_SCOPE), sizeof(f->quota_scope));
    ts_strlcpy(f->usage_mode, _v(r, i, C_MODE), sizeof(f->usage_mode));
    f->folder_perm = vf_perm_parse(_v(r, i, C_PERM), false);
    f->cloneable = _v(r, i, C_CLONEABLE)[0] == 't';
    f->quota_bytes = strtoll(_v(r, i, C_QUOTA), NULL, 10);
    const vf_volume *vol = vf_volume_find(f->host);
    if (vol) vf_volume_folder_path(vol, f->id, f->host_path);
}

/* The caller's effective permission on row i and how it comes:
 * rank 4 owner, 3 shared/invited, 2 project member, 1 admin only, 0 none. */
static vf_perm _effective(const vf_caller *c, const PGresult *r, int i, bool *via_admin, int *rank)
{
    bool user_owned = strcmp(_v(r, i, C_OWNERSHIP), "user") == 0;
    const char *owner = _v(r, i, user_owned ? C_USER : C_GROUP);
    vf_perm p = VF_PERM_NONE;
    *rank = 0;
    if (user_owned && owner && strcmp(owner, c->user_id) == 0) {
        p = VF_PERM_OWNER;
        *rank = 4;
    } else if (_v(r, i, C_SHARED) && (user_owned || vf_caller_in_project(c, owner))) {
        p = vf_perm_parse(_v(r, i, C_SHARED), false);
        *rank = 3;
    } else if (!user_owned && vf_caller_in_project(c, owner)) {
        p = vf_perm_parse(_v(r, i, C_PERM), false);
        *rank = 2;
    }
    *via_admin = false;
    if (p != VF_PERM_OWNER &&
        vf_caller_admin_over(c, _v(r, i, C_DOMAIN), user_owned ? owner : NULL)) {
        *via_admin = p == VF_PERM_NONE;
        p = VF_PERM_OWNER;
        if (*rank == 0) *rank = 1;
    }
    return p;
}

/* A uuid[] literal of the ids in the context's array `key` (its strings, or
 * its objects' "id"). */
static char *_ctx_ids_literal(const vf_caller *c, const char *key)
{
    size_t n = json_array_size(json_object_get(c->ctx, key));
    char *out = ts_malloc(n * TS_UUID_STRLEN + 3), *o = out;
    *o++ = '{';
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(c->ctx, key), i, p)
    {
        const char *id =
            json_is_string(p) ? json_string_value(p) : json_string_value(json_object_get(p, "id"));
        if (!id || !ts_uuid_valid(id)) continue;
        if (o[-1] != '{') *o++ = ',';
        memcpy(o, id, 36);
        o += 36;
    }
    *o++ = '}';
    *o = '\0';
    return out;
}

char *vf_caller_projects_literal(const vf_caller *c)
{
    return _ctx_ids_literal(c, "projects");
}

/* The JSON answer for a folder (list and info), as the caller sees it. */
static json_t *_folder_json(const vf_caller *c, const PGresult *r, int i)
{
    bool via_admin;
    int rank;
    vf_perm p = _effective(c, r, i, &via_admin, &rank);
    bool user_owned = strcmp(_v(r, i, C_OWNERSHIP), "user") == 0;
    bool is_owner = rank == 4;
    const char *perm =
        (is_owner || rank == 1 || p == VF_PERM_NONE) ? _v(r, i, C_PERM) : vf_perm_name(p);
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(_v(r, i, C_ID)));
    json_object_set_new(o, "name", json_string(_v(r, i, C_NAME)));
    json_object_set_new(o, "host", json_string(_v(r, i, C_HOST)));
    json_object_set_new(o, "usage_mode", json_string(_v(r, i, C_MODE)));
    json_object_set_new(o, "permission", json_string(perm));
    json_object_set_new(o, "ownership_type", json_string(user_owned ? "user" : "group"));
    json_object_set_new(o, "type", json_string(user_owned ? "user" : "group"));
    json_object_set_new(o, "is_owner", json_boolean(is_owner));
    json_object_set_new(o, "user", _v(r, i, C_USER) ? json_string(_v(r, i, C_USER)) : json_null());
    json_object_set_new(o, "group",
                        _v(r, i, C_GROUP) ? json_string(_v(r, i, C_GROUP)) : json_null());
    json_object_set_new(o, "domain_name", json_string(_v(r, i, C_DOMAIN)));
    json_object_set_new(o, "created_at", pgjson_cell_json(r, i, C_CREATED));
    json_object_set_new(o, "status", json_string(_v(r, i, C_STATUS)));
    json_object_set_new(o, "cloneable", json_boolean(_v(r, i, C_CLONEABLE)[0] == 't'));
    json_object_set_new(o, "quota_scope_id", json_string(_v(r, i, C_SCOPE)));
    json_object_set_new(o, "max_size", json_integer(strtoll(_v(r, i, C_QUOTA), NULL, 10)));
    json_object_set_new(o, "used_bytes", json_integer(strtoll(_v(r, i, C_USAGE), NULL, 10)));
    return o;
}

/* ---- resolution ------------------------------------------------------------------ */

/* Candidates by name among what the caller can reach ($4 its projects; $5
 * superadmin; $6 the domain it administers), or any folder by id. */
static const char resolve_sql[] =
    "SELECT" FCOLS FJOIN " WHERE v.status = $7 AND (($3::uuid IS NOT NULL AND v.id = $3::uuid)"
    "   OR (v.name = $2 AND (v.user_id = $1::uuid"
    "     OR (v.ownership_type = 'user' AND p.user_id IS NOT NULL)"
    "     OR (v.ownership_type = 'group' AND (v.group_id = ANY($4::uuid[]) OR $5::boolean"
    "         OR v.domain_name = $6)))))"
    " ORDER BY v.created_at, v.id";

/* Find the best candidate; *found_rank 0 when none is visible. */
static bool _resolve_status(svc *s, const vf_caller *c, const char *name_or_id, const char *status,
                            vf_perm need, vf_folder *out, http_resp *resp)
{
    memset(out, 0, sizeof(*out));
    if (!name_or_id || !*name_or_id || strlen(name_or_id) > 256) {
        http_problem(resp, 404, "vfolder-not-found", "Virtual Folder Not Found", "no such vfolder");
        return false;
    }
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) return false;
    char *projects = vf_caller_projects_literal(c);
    bool admin = strcmp(c->role, "admin") == 0;
    const char *params[] = {c->user_id,
                            name_or_id,
                            ts_uuid_valid(name_or_id) ? name_or_id : NULL,
                            projects,
                            vf_caller_is_superadmin(c) ? "t" : "f",
                            admin ? c->domain_name : NULL,
                            status};
    PGresult *r = pgjson_query(conn, resp, "resolve vfolder", resolve_sql, 7, params);
    free(projects);
    bool ok = false;
    if (r) {
        int best = -1, best_rank = 0;
        vf_perm best_perm = VF_PERM_NONE;
        bool best_admin = false;
        for (int i = 0; i < PQntuples(r); i++) {
            bool via_admin;
            int rank;
            vf_perm p = _effective(c, r, i, &via_admin, &rank);
            /* An exact id beats names; then the closest relation. */
            if (strcmp(_v(r, i, C_ID), name_or_id) == 0 && p != VF_PERM_NONE) rank += 10;
            if (p != VF_PERM_NONE && rank > best_rank) {
                best = i;
                best_rank = rank;
                best_perm = p;
                best_admin = via_admin;
            }
        }
        if (best < 0) {
            http_problem(resp, 404, "vfolder-not-found", "Virtual Folder Not Found",
                         "vfolder %s not found", name_or_id);
        } else {
            _row_folder(r, best, out);
            out->perm = best_perm;
            out->via_admin = best_admin;
            if (best_perm < need) {
                http_problem(resp, 403, "forbidden", NULL,
                             "vfolder %s: your permission is %s, this needs %s", out->name,
                             vf_perm_name(best_perm), vf_perm_name(need));
            } else if (!vf_volume_find(out->host)) {
                http_problem(resp, 503, "service-unavailable", NULL,
                             "vfolder %s: its volume %s is not configured here", out->name,
                             out->host);
            } else {
                ok = true;
            }
        }
        PQclear(r);
    }
    pgjson_put(s, conn);
    return ok;
}

bool vf_resolve(svc *s, const vf_caller *caller, const char *name_or_id, vf_perm need,
                vf_folder *out, http_resp *resp)
{
    return _resolve_status(s, caller, name_or_id, "ready", need, out, resp);
}

bool vf_folder_by_id(svc *s, const char *id, vf_folder *out, ts_err *err)
{
    memset(out, 0, sizeof(*out));
    if (!id || !ts_uuid_valid(id)) {
        ts_err_set(err, "not a vfolder id");
        return false;
    }
    pg_pool *pool = svc_pg(s);
    PGconn *conn = pool ? pg_pool_get(pool, 5000, err) : NULL;
    if (!conn) {
        if (!pool) ts_err_set(err, "not connected to PostgreSQL yet");
        return false;
    }
    static const char sql[] = "SELECT" FCOLS " FROM vfolder.vfolders v LEFT JOIN"
                              " vfolder.permissions p ON false WHERE v.id = $1::uuid";
    const char *params[] = {id};
    PGresult *r = PQexecParams(conn, sql, 1, NULL, params, NULL, NULL, 0);
    bool ok = false;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        ts_err_set(err, "%s", PQresultErrorMessage(r));
    } else if (PQntuples(r) != 1) {
        ts_err_set(err, "vfolder %s not found", id);
    } else if (strcmp(_v(r, 0, C_STATUS), "ready") != 0) {
        ts_err_set(err, "vfolder %s is %s", id, _v(r, 0, C_STATUS));
    } else {
        _row_folder(r, 0, out);
        out->perm = VF_PERM_OWNER;
        ok = out->host_path[0] != '\0';
        if (!ok) ts_err_set(err, "vfolder %s: volume %s is not configured here", id, out->host);
    }
    PQclear(r);
    pg_pool_put(pool, conn);
    return ok;
}

/* ---- validation ------------------------------------------------------------------ */

bool vf_name_ok(const char *name, const char *field, http_resp *resp)
{
    static const char *const reserved[] = {"_",          ".ssh",    ".jupyter",      ".terminfo",
                                           ".tmux.conf", ".bashrc", ".bash_profile", ".zshrc",
                                           ".vimrc"};
    const char *why = NULL;
    size_t len = strlen(name);
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        why = "\".\" and \"..\" are not names";
    else if (strchr(name, '/') || strchr(name, '\\'))
        why = "no '/' or '\\' allowed";
    else if (len && (name[0] == ' ' || name[len - 1] == ' '))
        why = "no leading or trailing spaces";
    for (size_t i = 0; !why && i < TS_ARRAY_LEN(reserved); i++)
        if (strcmp(name, reserved[i]) == 0) why = "reserved name";
    for (const unsigned char *p = (const unsigned char *)name; !why && *p; p++)
        if (*p < 0x20 || *p == 0x7f) why = "no control characters";
    if (why) {
        http_problem(resp, 400, "invalid-api-params", NULL, "%s: invalid vfolder name: %s", field,
                     why);
        return false;
    }
    return true;
}

/* The project a create or clone names (`group`: a project id or a name in
 * the caller's domain): its id and *project, the context's project object
 * (allowed_vfolder_hosts, max_quota_scope_size; a new reference). Members are
 * found in the context; admins of other projects through auth's
 * session-context?group=. */
static bool _find_project(http_req *req, http_resp *resp, const vf_caller *c, const char *group,
                          char project_id[TS_UUID_STRLEN], json_t **project)
{
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(c->ctx, "projects"), i, p)
    {
        const char *id = json_string_value(json_object_get(p, "id"));
        const char *name = json_string_value(json_object_get(p, "name"));
        if ((id && strcmp(id, group) == 0) || (name && strcmp(name, group) == 0)) {
            ts_strlcpy(project_id, id, TS_UUID_STRLEN);
            *project = json_incref(p);
            return true;
        }
    }
    if (strcmp(c->role, "user") == 0) {
        http_problem(resp, 404, "not-found", NULL, "project %s not found among yours", group);
        return false;
    }
    /* An admin who is not a member: ask auth (it checks the domain). */
    long status = 0;
    json_t *ctx = NULL;
    ts_err err = {{0}};
    if (!vf_auth_project(c->access_key, group, req->request_id, &status, &ctx, &err)) {
        http_problem(resp, 503, "service-unavailable", NULL, "%s", err.msg);
        return false;
    }
    const json_t *proj = json_object_get(ctx, "project");
    const char *id = json_string_value(json_object_get(proj, "id"));
    if (status != 200 || !id) {
        http_problem(resp, status == 403 ? 403 : 404, status == 403 ? "forbidden" : "not-found",
                     NULL, "project %s not found", group);
        json_decref(ctx);
        return false;
    }
    ts_strlcpy(project_id, id, TS_UUID_STRLEN);
    *project = json_incref((json_t *)proj);
    json_decref(ctx);
    return true;
}

/* ---- create and clone ------------------------------------------------------------ */

typedef struct _new_folder {
    const char *name, *host, *usage_mode, *permission;
    bool cloneable;
    int64_t quota;
    bool project;
    int64_t scope_max; /* the owner's quota scope size (0: unlimited) */
    int64_t max_count; /* the owner's policy's max_vfolder_count (0: unlimited) */
    char owner_id[TS_UUID_STRLEN];
    const char *status; /* "ready" or "cloning" */
} _new_folder;

/* Insert the row and make the directory, under the owner's advisory lock
 * (count limit without races). Sends the problem and returns false; on
 * success fills f (the caller is the creator). */
static bool _insert_folder(svc *s, http_resp *resp, const vf_caller *c, const _new_folder *nf,
                           vf_folder *f)
{
    const vf_volume *vol = vf_volume_find(nf->host);
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    char scope[64];
    snprintf(scope, sizeof(scope), "%s:%s", nf->project ? "project" : "user", nf->owner_id);
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) return false;
    bool ok = false;
    if (!pgjson_begin(conn, resp)) goto out;
    const char *lp[] = {nf->owner_id};
    PGresult *r =
        pgjson_query(conn, resp, "lock owner",
                     "SELECT pg_advisory_xact_lock(hashtext('vfolder-owner:' || $1))", 1, lp);
    if (!r) goto rollback;
    PQclear(r);
    if (nf->max_count > 0) {
        r = pgjson_query(conn, resp, "count vfolders",
                         nf->project
                             ? "SELECT count(*) FROM vfolder.vfolders WHERE group_id = $1::uuid"
                               " AND status NOT IN ('trash', 'purging', 'purged')"
                             : "SELECT count(*) FROM vfolder.vfolders WHERE user_id = $1::uuid"
                               " AND status NOT IN ('trash', 'purging', 'purged')",
                         1, lp);
        if (!r) goto rollback;
        long long n = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        PQclear(r);
        if (n >= nf->max_count) {
            http_problem(resp, 412, "quota-exceeded", "Quota Exceeded",
                         "%s %lld vfolders: %s resource policy allows at most %" PRId64,
                         nf->project ? "the project has" : "you have", n,
                         nf->project ? "its project" : "your", nf->max_count);
            goto rollback;
        }
    }
    ts_err err = {{0}};
    if (!vf_quota_scope_touch(conn, scope, nf->scope_max, &err)) {
        http_problem(resp, 500, "internal-server-error", NULL, "quota scope: %s", err.msg);
        goto rollback;
    }
    char quota[24];
    snprintf(quota, sizeof(quota), "%" PRId64, nf->quota);
    const char *ip[] = {id,
                        nf->name,
                        nf->host,
                        nf->project ? "group" : "user",
                        nf->project ? NULL : nf->owner_id,
                        nf->project ? nf->owner_id : NULL,
                        c->user_id,
                        c->domain_name,
                        nf->usage_mode,
                        nf->permission,
                        nf->cloneable ? "t" : "f",
                        quota,
                        scope,
                        nf->status};
    r = pgjson_query(conn, resp, "create vfolder",
                     "INSERT INTO vfolder.vfolders (id, name, host, ownership_type, user_id,"
                     " group_id, creator_id, domain_name, usage_mode, permission, cloneable,"
                     " quota_bytes, quota_scope_id, status) VALUES ($1, $2, $3, $4, $5, $6, $7,"
                     " $8, $9, $10, $11, $12::bigint, $13, $14)",
                     14, ip);
    if (!r) {
        /* pgjson_problem said 409 already-exists for the unique name. */
        if (http_resp_status(resp) == 409)
            http_problem(resp, 409, "already-exists", NULL, "a vfolder named %s already exists",
                         nf->name);
        goto rollback;
    }
    PQclear(r);
    r = pgjson_query(conn, resp, "read vfolder",
                     "SELECT" FCOLS " FROM vfolder.vfolders v LEFT JOIN vfolder.permissions p"
                     " ON false WHERE v.id = $1::uuid",
                     1, ip);
    if (!r) goto rollback;
    _row_folder(r, 0, f);
    f->perm = VF_PERM_OWNER;
    PQclear(r);
    if (!vf_volume_create_dir(vol, id, nf->quota, &err)) {
        TLOG_ERROR("vfolder directory not created", "vfolder=%s host=%s error=\"%s\"", id, nf->host,
                   err.msg);
        http_problem(resp, 500, "internal-server-error", NULL, "could not create the folder: %s",
                     err.msg);
        goto rollback;
    }
    if (!pgjson_commit(conn, resp)) {
        if (!vf_volume_purge(vol, id, &err)) TLOG_WARN("cleanup failed", "vfolder=%s", id);
        goto out;
    }
    ok = true;
    goto out;
rollback:
    pg_rollback(conn);
out:
    pgjson_put(s, conn);
    return ok;
}

/* Common fields of create and clone: host (default), usage_mode,
 * permission, cloneable, quota. */
static bool _read_common(json_t *body, const char *host_key, _new_folder *nf, http_resp *resp)
{
    bool present = false;
    long long quota = 0;
    if (!pgjson_field_str(body, host_key, false, 1, 64, &nf->host, resp) ||
        !pgjson_field_enum(body, "usage_mode", false, "general|data|model", &nf->usage_mode,
                           resp) ||
        !pgjson_field_enum(body, "permission", false, "ro|rw|wd", &nf->permission, resp) ||
        !pgjson_field_bool(body, "cloneable", false, &nf->cloneable, &present, resp) ||
        !pgjson_field_int(body, "quota", false, 0, INT64_MAX, &quota, &present, resp))
        return false;
    nf->quota = present ? quota : 0;
    if (!nf->host) nf->host = vf_cfg.default_host;
    if (!nf->usage_mode) nf->usage_mode = "general";
    if (!nf->permission) nf->permission = "rw";
    if (!vf_volume_find(nf->host)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "unknown vfolder host %s", nf->host);
        return false;
    }
    return true;
}

void vf_h_create(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    vf_caller c;
    if (!vf_caller_get(s, req, resp, &c)) return;
    json_t *body = http_json_body(req, resp), *project = NULL;
    if (!body) goto out;
    static const char *const keys[] = {"name",           "host",       "group",     "group_id",
                                       "usage_mode",     "permission", "cloneable", "quota",
                                       "unmanaged_path", NULL};
    _new_folder nf = {.status = "ready"};
    const char *group = NULL, *group_id = NULL, *unmanaged = NULL;
    if (!pgjson_only_keys(body, keys, resp) ||
        !pgjson_field_str(body, "name", true, 1, 64, &nf.name, resp) ||
        !vf_name_ok(nf.name, "name", resp) || !_read_common(body, "host", &nf, resp) ||
        !pgjson_field_str(body, "group", false, 1, 256, &group, resp) ||
        !pgjson_field_str(body, "group_id", false, 1, 256, &group_id, resp) ||
        !pgjson_field_str(body, "unmanaged_path", false, 0, 4096, &unmanaged, resp))
        goto out;
    if (unmanaged && *unmanaged) {
        http_problem(resp, 400, "invalid-api-params", NULL, "unmanaged_path is not supported");
        goto out;
    }
    if (!group) group = group_id;
    if (group) {
        nf.project = true;
        if (!_find_project(req, resp, &c, group, nf.owner_id, &project)) goto out;
        /* Project folders are created by administrators (Backend.AI's rule). */
        if (!vf_caller_admin_of(&c, c.domain_name)) {
            http_problem(resp, 403, "forbidden", NULL,
                         "only domain admins and superadmins create project vfolders");
            goto out;
        }
    } else {
        ts_strlcpy(nf.owner_id, c.user_id, sizeof(nf.owner_id));
    }
    if (!vf_caller_host_allows(&c, json_object_get(project, "allowed_vfolder_hosts"), nf.host,
                               VF_HOST_CREATE)) {
        http_problem(resp, 403, "forbidden", NULL,
                     "your policies do not allow creating vfolders on host %s", nf.host);
        goto out;
    }
    json_t *pmax = json_object_get(project, "max_quota_scope_size");
    json_t *pcount = json_object_get(project, "max_vfolder_count");
    nf.scope_max = !nf.project             ? vf_caller_max_quota_scope_size(&c)
                   : json_is_integer(pmax) ? json_integer_value(pmax)
                                           : 0;
    nf.max_count = !nf.project               ? vf_caller_max_vfolder_count(&c)
                   : json_is_integer(pcount) ? json_integer_value(pcount)
                                             : 0;
    if (nf.scope_max > 0 && nf.quota > nf.scope_max) {
        http_problem(resp, 412, "quota-exceeded", "Quota Exceeded",
                     "quota %" PRId64 " is above the %s quota scope size %" PRId64, nf.quota,
                     nf.project ? "project's" : "your", nf.scope_max);
        goto out;
    }
    vf_folder f;
    if (!_insert_folder(s, resp, &c, &nf, &f)) goto out;
    TLOG_INFO("vfolder created", "vfolder=%s name=\"%s\" host=%s owner=%s user=%s", f.id, f.name,
              f.host, f.owner_id, c.user_id);
    vf_event_created(s, req->request_id, &f, c.user_id);
    /* Answer as info does. */
    PGconn *conn = pgjson_get(s, resp);
    if (conn) {
        const char *p[] = {c.user_id, f.id};
        PGresult *r = pgjson_query(conn, resp, "read vfolder",
                                   "SELECT" FCOLS FJOIN " WHERE v.id = $2::uuid", 2, p);
        if (r) {
            http_reply_json(resp, 201, _folder_json(&c, r, 0));
            PQclear(r);
        }
        pgjson_put(s, conn);
    }
out:
    json_decref(body);
    json_decref(project);
    vf_caller_free(&c);
}

void vf_h_clone(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    vf_caller c;
    if (!vf_caller_get(s, req, resp, &c)) return;
    json_t *body = http_json_body(req, resp);
    vf_folder src, f;
    if (!body) goto out;
    static const char *const keys[] = {"target_name", "target_host", "usage_mode", "permission",
                                       "cloneable",   "quota",       NULL};
    _new_folder nf = {.status = "cloning"};
    if (!pgjson_only_keys(body, keys, resp) ||
        !pgjson_field_str(body, "target_name", true, 1, 64, &nf.name, resp) ||
        !vf_name_ok(nf.name, "target_name", resp) || !_read_common(body, "target_host", &nf, resp))
        goto out;
    if (!vf_resolve(s, &c, http_param(req, "name"), VF_PERM_RO, &src, resp)) goto out;
    if (!src.cloneable && !(src.perm == VF_PERM_OWNER && !src.via_admin)) {
        http_problem(resp, 403, "forbidden", NULL, "vfolder %s is not cloneable", src.name);
        goto out;
    }
    if (!json_object_get(body, "usage_mode")) nf.usage_mode = src.usage_mode;
    ts_strlcpy(nf.owner_id, c.user_id, sizeof(nf.owner_id));
    nf.scope_max = vf_caller_max_quota_scope_size(&c);
    nf.max_count = vf_caller_max_vfolder_count(&c);
    if (!vf_caller_host_allows(&c, NULL, nf.host, VF_HOST_CREATE)) {
        http_problem(resp, 403, "forbidden", NULL,
                     "your policies do not allow creating vfolders on host %s", nf.host);
        goto out;
    }
    /* Past the clone's own quota: refused before copying (on XFS with
     * project quotas the copy itself would hit the project's limit). */
    int64_t src_bytes = 0;
    ts_err du_err = {{0}};
    if (nf.quota > 0 && vf_volume_du(src.host_path, &src_bytes, &du_err) && src_bytes > nf.quota) {
        http_problem(resp, 412, "quota-exceeded", "Quota Exceeded",
                     "vfolder %s holds %" PRId64 " bytes, more than the clone's quota %" PRId64,
                     src.name, src_bytes, nf.quota);
        goto out;
    }
    if (!_insert_folder(s, resp, &c, &nf, &f)) goto out;
    ts_err err = {{0}};
    int64_t bytes = 0;
    vf_quota_rc rc = VF_QUOTA_ERROR;
    bool copied = vf_volume_clone(vf_volume_find(src.host), src.id, vf_volume_find(f.host), f.id,
                                  &bytes, &err);
    if (copied) rc = vf_quota_charge(s, f.id, bytes, req->request_id, &err);
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) goto out;
    const char *p[] = {c.user_id, f.id};
    if (!copied || rc != VF_QUOTA_OK) {
        ts_err e2 = {{0}};
        if (!vf_volume_purge(vf_volume_find(f.host), f.id, &e2))
            TLOG_WARN("clone cleanup failed", "vfolder=%s error=\"%s\"", f.id, e2.msg);
        PGresult *r = pgjson_query(conn, resp, "drop clone",
                                   "DELETE FROM vfolder.vfolders WHERE id = $2::uuid AND"
                                   " $1::uuid IS NOT NULL",
                                   2, p);
        if (r) PQclear(r);
        if (!copied) {
            TLOG_ERROR("clone failed", "vfolder=%s source=%s error=\"%s\"", f.id, src.id, err.msg);
            http_problem(resp, 500, "internal-server-error", NULL, "clone failed: %s", err.msg);
        } else {
            vf_quota_problem(resp, rc, &f, bytes, &err);
        }
        pgjson_put(s, conn);
        goto out;
    }
    PGresult *r = pgjson_query(conn, resp, "finish clone",
                               "UPDATE vfolder.vfolders SET status = 'ready' WHERE id = $2::uuid"
                               " AND $1::uuid IS NOT NULL",
                               2, p);
    if (r) {
        PQclear(r);
        r = pgjson_query(conn, resp, "read vfolder", "SELECT" FCOLS FJOIN " WHERE v.id = $2::uuid",
                         2, p);
    }
    if (r) {
        TLOG_INFO("vfolder cloned", "vfolder=%s source=%s bytes=%" PRId64, f.id, src.id, bytes);
        vf_event_created(s, req->request_id, &f, c.user_id);
        http_reply_json(resp, 201, _folder_json(&c, r, 0));
        PQclear(r);
    }
    pgjson_put(s, conn);
out:
    json_decref(body);
    vf_caller_free(&c);
}

/* ---- list, hosts, volumes, info ------------------------------------------------- */

static bool _truthy(const char *v)
{
    return v && (strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcmp(v, "yes") == 0);
}

void vf_h_list(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    vf_caller c;
    if (!vf_caller_get(s, req, resp, &c)) return;
    bool all = _truthy(http_query_arg(req, "all"));
    const char *group = http_query_arg(req, "group_id");
    if (!group) group = http_query_arg(req, "group");
    if (group && !ts_uuid_valid(group)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "group_id must be a project id");
        vf_caller_free(&c);
        return;
    }
    if (all && !vf_caller_admin_of(&c, c.domain_name)) {
        http_problem(resp, 403, "forbidden", NULL, "all=true is for administrators");
        vf_caller_free(&c);
        return;
    }
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) {
        vf_caller_free(&c);
        return;
    }
    char *projects = vf_caller_projects_literal(&c);
    /* all=true of a domain admin: its domain's folders but its superadmins' */
    char *hidden = _ctx_ids_literal(&c, "domain_superadmins");
    const char *params[] = {c.user_id,       projects,
                            all ? "t" : "f", vf_caller_is_superadmin(&c) ? NULL : c.domain_name,
                            group,           hidden};
    static const char sql[] =
        "SELECT" FCOLS FJOIN
        " WHERE v.status = 'ready' AND ($5::uuid IS NULL OR v.group_id = $5::uuid)"
        " AND (($3::boolean AND ($4::text IS NULL OR v.domain_name = $4)"
        "       AND NOT (v.ownership_type = 'user' AND v.user_id = ANY($6::uuid[])))"
        "   OR v.user_id = $1::uuid OR (v.ownership_type = 'user' AND p.user_id IS NOT NULL)"
        "   OR (v.ownership_type = 'group' AND v.group_id = ANY($2::uuid[])))"
        " ORDER BY v.created_at, v.id";
    PGresult *r = pgjson_query(conn, resp, "list vfolders", sql, 6, params);
    free(projects);
    free(hidden);
    if (r) {
        json_t *arr = json_array();
        for (int i = 0; i < PQntuples(r); i++)
            json_array_append_new(arr, _folder_json(&c, r, i));
        http_reply_json(resp, 200, arr);
        PQclear(r);
    }
    pgjson_put(s, conn);
    vf_caller_free(&c);
}

/* Accounted bytes and folders per host (ready, cloning and trashed folders). */
static json_t *_accounting(svc *s, http_resp *resp)
{
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) return NULL;
    PGresult *r =
        pgjson_query(conn, resp, "volume usage",
                     "SELECT host, coalesce(sum(usage_bytes), 0)::bigint,"
                     " count(*) FILTER (WHERE status <> 'trash'),"
                     " count(*) FILTER (WHERE status = 'trash')"
                     " FROM vfolder.vfolders WHERE status IN ('ready', 'cloning', 'trash')"
                     " GROUP BY host",
                     0, NULL);
    pgjson_put(s, conn);
    if (!r) return NULL;
    json_t *out = json_object();
    for (int i = 0; i < PQntuples(r); i++)
        json_object_set_new(out, PQgetvalue(r, i, 0),
                            json_pack("{s:I, s:I, s:I}", "bytes",
                                      (json_int_t)strtoll(PQgetvalue(r, i, 1), NULL, 10), "folders",
                                      (json_int_t)strtoll(PQgetvalue(r, i, 2), NULL, 10), "trashed",
                                      (json_int_t)strtoll(PQgetvalue(r, i, 3), NULL, 10)));
    PQclear(r);
    return out;
}

void vf_h_hosts(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    vf_caller c;
    if (!vf_caller_get(s, req, resp, &c)) return;
    json_t *allowed_map = vf_caller_allowed_hosts(&c, NULL);
    json_t *allowed = json_array(), *info = json_object();
    for (size_t i = 0; i < vf_volume_count(); i++) {
        const vf_volume *v = vf_volume_at(i);
        if (!vf_caller_is_superadmin(&c) && !json_object_get(allowed_map, v->name)) continue;
        json_array_append_new(allowed, json_string(v->name));
        json_t *caps = json_pack("[s]", "vfolder");
        if (v->xfs_quota) json_array_append_new(caps, json_string("quota"));
        json_object_set_new(info, v->name,
                            json_pack("{s:s, s:o, s:O}", "backend", v->xfs_quota ? "xfs" : "vfs",
                                      "capabilities", caps, "permissions",
                                      json_object_get(allowed_map, v->name)
                                          ? json_object_get(allowed_map, v->name)
                                          : json_null()));
    }
    bool def_ok =
        vf_volume_find(vf_cfg.default_host) &&
        (vf_caller_is_superadmin(&c) || json_object_get(allowed_map, vf_cfg.default_host));
    http_reply_json(resp, 200,
                    json_pack("{s:o, s:o, s:o}", "default",
                              def_ok ? json_string(vf_cfg.default_host) : json_null(), "allowed",
                              allowed, "volume_info", info));
    json_decref(allowed_map);
    vf_caller_free(&c);
}

void vf_h_volumes(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    vf_caller c;
    if (!vf_caller_get(s, req, resp, &c)) return;
    if (!vf_caller_admin_of(&c, c.domain_name)) {
        http_problem(resp, 403, "forbidden", NULL, "volume capacity is for administrators");
        vf_caller_free(&c);
        return;
    }
    json_t *acct = _accounting(s, resp);
    if (!acct) {
        vf_caller_free(&c);
        return;
    }
    json_t *items = json_array();
    for (size_t i = 0; i < vf_volume_count(); i++) {
        const vf_volume *v = vf_volume_at(i);
        int64_t total = 0, avail = 0;
        ts_err err = {{0}};
        bool cap = vf_volume_capacity(v, &total, &avail, &err);
        json_t *a = json_object_get(acct, v->name);
        json_t *o = json_pack(
            "{s:s, s:s, s:b, s:b, s:o, s:o, s:o, s:I, s:I, s:I}", "name", v->name, "fs_type",
            v->fs_type, "xfs_quota", v->xfs_quota, "default",
            strcmp(v->name, vf_cfg.default_host) == 0, "capacity_bytes",
            cap ? json_integer(total) : json_null(), "available_bytes",
            cap ? json_integer(avail) : json_null(), "used_bytes",
            cap ? json_integer(total - avail) : json_null(), "accounted_bytes",
            (json_int_t)json_integer_value(json_object_get(a, "bytes")), "folders",
            (json_int_t)json_integer_value(json_object_get(a, "folders")), "trashed_folders",
            (json_int_t)json_integer_value(json_object_get(a, "trashed")));
        if (vf_caller_is_superadmin(&c)) json_object_set_new(o, "path", json_string(v->path));
        if (!cap) json_object_set_new(o, "error", json_string(err.msg));
        json_array_append_new(items, o);
    }
    json_decref(acct);
    http_reply_json(resp, 200, json_pack("{s:o}", "volumes", items));
    vf_caller_free(&c);
}

void vf_h_info(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    vf_caller c;
    if (!vf_caller_get(s, req, resp, &c)) return;
    vf_folder f;
    if (vf_resolve(s, &c, http_param(req, "name"), VF_PERM_RO, &f, resp)) {
        /* The owner's current quota scope limit follows its policy. */
        vf_quota_scope_refresh(s, &c, &f);
        PGconn *conn = pgjson_get(s, resp);
        if (conn) {
            ts_err err = {{0}};
            const char *p[] = {c.user_id, f.id};
            PGresult *r = pgjson_query(conn, resp, "read vfolder",
                                       "SELECT" FCOLS FJOIN " WHERE v.id = $2::uuid", 2, p);
            if (r) {
                json_t *o = _folder_json(&c, r, 0);
                if (!f.via_admin || f.perm >= VF_PERM_OWNER) {
                    int64_t used = 0, limit = 0, sused = 0, slimit = 0;
                    if (vf_usage(s, &f, &used, &limit, &sused, &slimit, &err))
                        json_object_set_new(o, "quota_scope",
                                            json_pack("{s:s, s:I, s:I}", "id", f.quota_scope,
                                                      "used_bytes", (json_int_t)sused,
                                                      "limit_bytes", (json_int_t)slimit));
                }
                json_object_set_new(o, "numFiles", json_integer(0));
                http_reply_json(resp, 200, o);
                PQclear(r);
            }
            pgjson_put(s, conn);
        }
    }
    vf_caller_free(&c);
}

/* ---- delete (to the trash), purge, restore, rename -------------------------------- */

void vf_h_delete(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    vf_caller c;
    if (!vf_caller_get(s, req, resp, &c)) return;
    vf_folder f;
    if (!vf_resolve(s, &c, http_param(req, "name"), VF_PERM_OWNER, &f, resp)) goto out;
    if (!vf_caller_host_allows(&c, NULL, f.host, VF_HOST_DELETE) &&
        !vf_caller_admin_of(&c, f.domain_name)) {
        http_problem(resp, 403, "forbidden", NULL,
                     "your policies do not allow deleting vfolders on host %s", f.host);
        goto out;
    }
    if (!vf_mount_guard_free(f.id, f.name, req->request_id, resp)) goto out;
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) goto out;
    const char *p[] = {f.id};
    bool done = false;
    if (pgjson_begin(conn, resp)) {
        PGresult *r =
            pgjson_query(conn, resp, "trash vfolder",
                         "UPDATE vfolder.vfolders SET status = 'trash', trashed_at = now()"
                         " WHERE id = $1::uuid AND status = 'ready'",
                         1, p);
        ts_err err = {{0}};
        if (r && strcmp(PQcmdTuples(r), "1") != 0) {
            http_problem(resp, 404, "vfolder-not-found", "Virtual Folder Not Found",
                         "vfolder %s not found", f.name);
        } else if (r && !vf_volume_trash(vf_volume_find(f.host), f.id, &err)) {
            http_problem(resp, 500, "internal-server-error", NULL, "%s", err.msg);
        } else if (r) {
            done = pgjson_commit(conn, resp);
            if (!done) {
                ts_err e2 = {{0}};
                if (!vf_volume_restore(vf_volume_find(f.host), f.id, &e2))
                    TLOG_ERROR("restore after failed trash", "vfolder=%s error=\"%s\"", f.id,
                               e2.msg);
            }
        }
        if (r) PQclear(r);
        if (!done) pg_rollback(conn);
    }
    pgjson_put(s, conn);
    if (done) {
        TLOG_INFO("vfolder trashed", "vfolder=%s name=\"%s\" user=%s", f.id, f.name, c.user_id);
        vf_event_deleted(s, req->request_id, f.id, f.name, f.host, c.user_id, false);
        http_reply(resp, 204, NULL, NULL, 0);
    }
out:
    vf_caller_free(&c);
}

/* Purge one trashed folder (status 'trash' -> 'purging' -> 'purged'). *gone:
 * false when another purge took it first. */
static bool _purge(svc *s, PGconn *conn, const char *id, const char *name, const char *host,
                   const char *by, const char *request_id, ts_err *err)
{
    const char *p[] = {id};
    PGresult *r = PQexecParams(conn,
                               "UPDATE vfolder.vfolders SET status = 'purging' WHERE id = $1::uuid"
                               " AND status = 'trash'",
                               1, NULL, p, NULL, NULL, 0);
    bool mine = PQresultStatus(r) == PGRES_COMMAND_OK && strcmp(PQcmdTuples(r), "1") == 0;
    PQclear(r);
    if (!mine) {
        ts_err_set(err, "vfolder %s is not in the trash", id);
        return false;
    }
    const vf_volume *v = vf_volume_find(host);
    if (v && !vf_volume_purge(v, id, err)) {
        r = PQexecParams(conn, "UPDATE vfolder.vfolders SET status = 'trash' WHERE id = $1::uuid",
                         1, NULL, p, NULL, NULL, 0);
        PQclear(r);
        return false;
    }
    if (!pg_begin(conn, err)) return false;
    if (!vf_quota_forget(conn, id, err)) {
        pg_rollback(conn);
        return false;
    }
    r = PQexecParams(conn,
                     "UPDATE vfolder.vfolders SET status = 'purged', purged_at = now()"
                     " WHERE id = $1::uuid",
                     1, NULL, p, NULL, NULL, 0);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    r = PQexecParams(conn,
                     "UPDATE vfolder.invitations SET state = 'canceled', modified_at = now()"
                     " WHERE vfolder_id = $1::uuid AND state = 'pending'",
                     1, NULL, p, NULL, NULL, 0);
    PQclear(r);
    if (!ok || !pg_commit(conn, err)) {
        if (ok)
            ts_err_prefix(err, "commit");
        else
            ts_err_set(err, "mark purged failed");
        pg_rollback(conn);
        return false;
    }
    TLOG_INFO("vfolder purged", "vfolder=%s name=\"%s\" by=%s", id, name, by ? by : "sweeper");
    vf_event_deleted(s, request_id, id, name, host, by, true);
    return true;
}

/* A trashed folder the caller owns (or administers), by id. */
static bool _trashed(svc *s, const vf_caller *c, json_t *body, http_resp *resp, vf_folder *f)
{
    const char *id = NULL;
    if (!pgjson_field_uuid(body, "vfolder_id", false, &id, resp)) return false;
    if (!id && !pgjson_field_uuid(body, "id", true, &id, resp)) return false;
    return _resolve_status(s, c, id, "trash", VF_PERM_OWNER, f, resp);
}

void vf_h_purge(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    vf_caller c;
    if (!vf_caller_get(s, req, resp, &c)) return;
    json_t *body = http_json_body(req, resp);
    vf_folder f;
    if (body && _trashed(s, &c, body, resp, &f)) {
        PGconn *conn = pgjson_get(s, resp);
        if (conn) {
            ts_err err = {{0}};
            if (_purge(s, conn, f.id, f.name, f.host, c.user_id, req->request_id, &err))
                http_reply(resp, 204, NULL, NULL, 0);
            else
                http_problem(resp, 409, "conflict", NULL, "purge failed: %s", err.msg);
            pgjson_put(s, conn);
        }
    }
    json_decref(body);
    vf_caller_free(&c);
}

void vf_h_restore(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    vf_caller c;
    if (!vf_caller_get(s, req, resp, &c)) return;
    json_t *body = http_json_body(req, resp);
    vf_folder f;
    if (body && _trashed(s, &c, body, resp, &f)) {
        PGconn *conn = pgjson_get(s, resp);
        if (conn) {
            const char *p[] = {f.id};
            if (pgjson_begin(conn, resp)) {
                /* IS NOT DISTINCT FROM: a status test the partial index
                 * vfolders_trash cannot answer, so the cached plan finds the
                 * row by its id (an EXPLAIN of the generic plan of "status =
                 * 'trash'" on an empty table reads vfolders_trash, then every
                 * folder in the trash on each restore). */
                PGresult *r = pgjson_query(conn, resp, "restore vfolder",
                                           "UPDATE vfolder.vfolders SET status = 'ready',"
                                           " trashed_at = NULL WHERE id = $1::uuid AND"
                                           " status IS NOT DISTINCT FROM 'trash'",
                                           1, p);
                ts_err err = {{0}};
                bool ok = false;
                if (!r && http_resp_status(resp) == 409)
                    http_problem(resp, 409, "already-exists", NULL,
                                 "a vfolder named %s exists again: rename it first", f.name);
                else if (r && !vf_volume_restore(vf_volume_find(f.host), f.id, &err))
                    http_problem(resp, 500, "internal-server-error", NULL, "%s", err.msg);
                else if (r)
                    ok = pgjson_commit(conn, resp);
                if (r) PQclear(r);
                if (ok)
                    http_reply(resp, 204, NULL, NULL, 0);
                else
                    pg_rollback(conn);
            }
            pgjson_put(s, conn);
        }
    }
    json_decref(body);
    vf_caller_free(&c);
}

void vf_sweep_trash(svc *s)
{
    pg_pool *pool = svc_pg(s);
    ts_err err = {{0}};
    PGconn *conn = pool ? pg_pool_get(pool, 1000, &err) : NULL;
    if (!conn) return;
    char secs[32];
    snprintf(secs, sizeof(secs), "%" PRId64, vf_cfg.trash_retention_ms / 1000);
    const char *p[] = {secs};
    PGresult *r = PQexecParams(conn,
                               "SELECT id::text, name, host FROM vfolder.vfolders"
                               " WHERE status = 'trash' AND trashed_at <="
                               " now() - make_interval(secs => $1::double precision)"
                               " ORDER BY trashed_at LIMIT 100",
                               1, NULL, p, NULL, NULL, 0);
    if (PQresultStatus(r) == PGRES_TUPLES_OK) {
        for (int i = 0; i < PQntuples(r); i++) {
            ts_err e = {{0}};
            if (!_purge(s, conn, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2),
                        NULL, NULL, &e))
                TLOG_WARN("purge failed", "vfolder=%s error=\"%s\"", PQgetvalue(r, i, 0), e.msg);
        }
    }
    PQclear(r);
    pg_pool_put(pool, conn);
}

void vf_h_rename(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    vf_caller c;
    if (!vf_caller_get(s, req, resp, &c)) return;
    json_t *body = http_json_body(req, resp);
    const char *new_name = NULL;
    static const char *const keys[] = {"new_name", NULL};
    vf_folder f;
    if (!body || !pgjson_only_keys(body, keys, resp) ||
        !pgjson_field_str(body, "new_name", true, 1, 64, &new_name, resp) ||
        !vf_name_ok(new_name, "new_name", resp))
        goto out;
    if (!vf_resolve(s, &c, http_param(req, "name"), VF_PERM_OWNER, &f, resp)) goto out;
    if (!vf_caller_host_allows(&c, NULL, f.host, VF_HOST_MODIFY) &&
        !vf_caller_admin_of(&c, f.domain_name)) {
        http_problem(resp, 403, "forbidden", NULL,
                     "your policies do not allow modifying vfolders on host %s", f.host);
        goto out;
    }
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) goto out;
    const char *p[] = {f.id, new_name};
    PGresult *r = pgjson_query(conn, resp, "rename vfolder",
                               "UPDATE vfolder.vfolders SET name = $2 WHERE id = $1::uuid"
                               " AND status = 'ready'",
                               2, p);
    if (!r && http_resp_status(resp) == 409)
        http_problem(resp, 409, "already-exists", NULL, "a vfolder named %s already exists",
                     new_name);
    if (r) {
        TLOG_INFO("vfolder renamed", "vfolder=%s from=\"%s\" to=\"%s\"", f.id, f.name, new_name);
        http_reply_json(resp, 201, json_pack("{s:s, s:s}", "id", f.id, "name", new_name));
        PQclear(r);
    }
    pgjson_put(s, conn);
out:
    json_decref(body);
    vf_caller_free(&c);
}

/* ---- mounts (the registry, at session creation) ------------------------------------ */

/* A mount path from mount_map: absolute under /home/work/, or relative to it;
 * no "." or ".." segments, no empty segments, not under a home-directory
 * name a mount would shadow (the reserved names of vf_name_ok). Heap, or
 * NULL with *why when invalid. */
static char *_mount_path(const char *name, const char *mapped, const char **why)
{
    static const char *const reserved[] = {".ssh",       ".jupyter", ".terminfo",
                                           ".tmux.conf", ".bashrc",  ".bash_profile",
                                           ".zshrc",     ".vimrc",   ".local/bin"};
    *why = NULL;
    if (!mapped) return ts_asprintf("/home/work/%s", name);
    const char *rel = mapped;
    if (mapped[0] == '/') {
        if (strncmp(mapped, "/home/work/", 11) != 0) {
            *why = "absolute paths must be under /home/work/";
            return NULL;
        }
        rel = mapped + 11;
    }
    if (!*rel || strlen(rel) > 1024) {
        *why = "a path of 1 to 1024 bytes below /home/work is needed";
        return NULL;
    }
    for (const char *seg = rel; seg;) {
        const char *end = strchr(seg, '/');
        size_t n = end ? (size_t)(end - seg) : strlen(seg);
        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.')) {
            *why = "no empty, . or .. segments allowed";
            return NULL;
        }
        seg = end ? end + 1 : NULL;
    }
    for (const unsigned char *p = (const unsigned char *)rel; *p; p++)
        if (*p < 0x20) {
            *why = "no control characters allowed";
            return NULL;
        }
    for (size_t i = 0; i < TS_ARRAY_LEN(reserved); i++) {
        size_t n = strlen(reserved[i]);
        if (strncmp(rel, reserved[i], n) == 0 && (rel[n] == 0 || rel[n] == '/')) {
            *why = "reserved path (a mount there would shadow the session's own files)";
            return NULL;
        }
    }
    return ts_asprintf("/home/work/%s", rel);
}

/* A 4xx problem whose `vfolder` member names the folder. */
static void _mount_problem(http_resp *resp, int status, const char *kind, const char *name,
                           const char *fmt, ...) TS_PRINTF(5, 6);
static void _mount_problem(http_resp *resp, int status, const char *kind, const char *name,
                           const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    json_t *prob = http_problem_json(kind, status == 403 ? "Forbidden" : "Bad Request", msg);
    json_object_set_new(prob, "vfolder", json_string(name));
    char *text = json_dumps(prob, JSON_COMPACT);
    http_reply(resp, status, "application/problem+json", text, strlen(text));
    free(text);
    json_decref(prob);
}

void vf_h_mounts_resolve(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    json_t *body = http_json_body(req, resp);
    if (!body) return;
    static const char *const keys[] = {"access_key", "names", "mount_map", NULL};
    const char *ak = NULL;
    json_t *names = json_object_get(body, "names");
    json_t *map = json_object_get(body, "mount_map");
    vf_caller c = {0};
    json_t *out = NULL;
    if (!pgjson_only_keys(body, keys, resp) ||
        !pgjson_field_str(body, "access_key", true, 20, 20, &ak, resp))
        goto done;
    if (!json_is_array(names) || json_array_size(names) > 64) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "names must be an array of at most 64 vfolder names or ids");
        goto done;
    }
    if (map && !json_is_null(map) && !json_is_object(map)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "mount_map must be an object {name: path}");
        goto done;
    }
    size_t i;
    json_t *n;
    json_array_foreach(names, i, n)
    {
        const char *name = json_string_value(n);
        if (!name || !*name) {
            http_problem(resp, 400, "invalid-api-params", NULL, "names[%zu] must be a string", i);
            goto done;
        }
        for (size_t j = 0; j < i; j++)
            if (json_equal(json_array_get(names, j), n)) {
                http_problem(resp, 400, "invalid-api-params", NULL, "vfolder %s is named twice",
                             name);
                goto done;
            }
    }
    if (!vf_caller_for_key(s, req, resp, ak, &c)) goto done;
    out = json_array();
    json_array_foreach(names, i, n)
    {
        const char *name = json_string_value(n);
        vf_folder f;
        if (!vf_resolve(s, &c, name, VF_PERM_RO, &f, resp)) {
            /* vf_resolve answered 404 / 403: say which folder in the body too. */
            size_t len = 0;
            const char *b = http_resp_body(resp, &len);
            json_t *prob = b ? json_loadb(b, len, 0, NULL) : NULL;
            if (prob) {
                json_object_set_new(prob, "vfolder", json_string(name));
                http_reply(resp, http_resp_status(resp), "application/problem+json", NULL, 0);
                char *text = json_dumps(prob, JSON_COMPACT);
                http_reply(resp, http_resp_status(resp), "application/problem+json", text,
                           strlen(text));
                free(text);
                json_decref(prob);
            }
            goto done;
        }
        if (f.via_admin) {
            _mount_problem(resp, 403, "forbidden", name,
                           "vfolder %s is not yours and not shared with you: "
                           "administrators cannot mount other users' folders",
                           name);
            goto done;
        }
        const json_t *project_hosts =
            f.ownership == VF_OWNER_PROJECT
                ? json_object_get(vf_caller_project(&c, f.owner_id), "allowed_vfolder_hosts")
                : NULL;
        if (!vf_caller_host_allows(&c, project_hosts, f.host, VF_HOST_MOUNT)) {
            _mount_problem(resp, 403, "forbidden", name,
                           "vfolder %s: your policies do not allow mounting from host %s", name,
                           f.host);
            goto done;
        }
        json_t *mv = json_object_get(map, name);
        if (mv && !json_is_string(mv)) {
            _mount_problem(resp, 400, "invalid-api-params", name,
                           "mount_map[%s]: must be a path (a string)", name);
            goto done;
        }
        const char *why = NULL;
        char *mp = _mount_path(f.name, json_string_value(mv), &why);
        if (!mp) {
            _mount_problem(resp, 400, "invalid-api-params", name,
                           "mount_map[%s]: bad mount path '%s': %s", name, json_string_value(mv),
                           why);
            goto done;
        }
        size_t k;
        json_t *prev;
        json_array_foreach(out, k, prev)
        {
            const char *pp = json_string_value(json_object_get(prev, "mount_path"));
            size_t a = strlen(pp), b = strlen(mp), m = a < b ? a : b;
            if (strcmp(pp, mp) == 0) {
                _mount_problem(resp, 400, "invalid-api-params", name,
                               "vfolders %s and %s would both mount at %s",
                               json_string_value(json_object_get(prev, "name")), name, mp);
                free(mp);
                goto done;
            }
            if (strncmp(pp, mp, m) == 0 && (a > b ? pp : mp)[m] == '/') {
                _mount_problem(resp, 400, "invalid-api-params", name,
                               "vfolders %s (%s) and %s (%s) would be mounted one inside the "
                               "other",
                               json_string_value(json_object_get(prev, "name")), pp, name, mp);
                free(mp);
                goto done;
            }
        }
        /* A project member's effective permission may be the folder's wd/rw/ro;
         * wd mounts read-write (deletes are writes to the kernel). */
        json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "vfolder_id", f.id,
                                             "name", f.name, "host", f.host, "host_path",
                                             f.host_path, "mount_path", mp, "permission",
                                             f.perm == VF_PERM_RO ? "ro" : "rw"));
        free(mp);
    }
    http_reply_json(resp, 200, out);
    out = NULL;
done:
    json_decref(out);
    json_decref(body);
    vf_caller_free(&c);
}
