/* folders.c: the folder model (folders.h): permission levels, folder rows
 * as the caller sees them, resolution by name or id, and the JSON of a
 * folder. */
#include "folders.h"

#include "libcommon/pgjson.h"
#include "volumes.h"

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
static vf_perm _effective(const ts_caller *c, const PGresult *r, int i, bool *via_admin, int *rank)
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
static char *_ctx_ids_literal(const ts_caller *c, const char *key)
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

/* The caller's projects as a PostgreSQL uuid[] literal "{a,b}" (heap). */
static char *_projects_literal(const ts_caller *c)
{
    return _ctx_ids_literal(c, "projects");
}

/* The JSON answer for a folder (list and info), as the caller sees it. */
static json_t *_folder_json(const ts_caller *c, const PGresult *r, int i)
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

/* The best candidate in status `status` (see vf_resolve). */
static bool _resolve_status(svc *s, const ts_caller *c, const char *name_or_id, const char *status,
                            vf_perm need, vf_folder *out, http_resp *resp)
{
    memset(out, 0, sizeof(*out));
    if (!name_or_id || !*name_or_id || strlen(name_or_id) > 256) {
        http_problem(resp, 404, "vfolder-not-found", "Virtual Folder Not Found", "no such vfolder");
        return false;
    }
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) return false;
    char *projects = _projects_literal(c);
    bool admin = strcmp(c->role, "admin") == 0;
    /* an id in either form: Backend.AI's clients send uuid.hex (no dashes) */
    char id[TS_UUID_STRLEN];
    bool is_id = ts_uuid_normalize(name_or_id, id);
    const char *params[] = {c->user_id,
                            name_or_id,
                            is_id ? id : NULL,
                            projects,
                            caller_is_superadmin(c) ? "t" : "f",
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
            if (is_id && strcmp(_v(r, i, C_ID), id) == 0 && p != VF_PERM_NONE) rank += 10;
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

bool vf_resolve(svc *s, const ts_caller *caller, const char *name_or_id, vf_perm need,
                vf_folder *out, http_resp *resp)
{
    return _resolve_status(s, caller, name_or_id, "ready", need, out, resp);
}

bool vf_resolve_trashed(svc *s, const ts_caller *caller, const char *id, vf_folder *out,
                        http_resp *resp)
{
    return _resolve_status(s, caller, id, "trash", VF_PERM_OWNER, out, resp);
}

/* One folder by id ($1), in any status, with no caller's row. */
static const char by_id_sql[] = "SELECT" FCOLS " FROM vfolder.vfolders v LEFT JOIN"
                                " vfolder.permissions p ON false WHERE v.id = $1::uuid";

bool vf_folder_read(PGconn *conn, http_resp *resp, const char *id, vf_folder *out)
{
    const char *p[] = {id};
    PGresult *r = pgjson_query(conn, resp, "read vfolder", by_id_sql, 1, p);
    if (!r) return false;
    bool ok = PQntuples(r) == 1;
    if (ok) {
        _row_folder(r, 0, out);
        out->perm = VF_PERM_OWNER;
    } else {
        http_problem(resp, 404, "vfolder-not-found", "Virtual Folder Not Found",
                     "vfolder %s not found", id);
    }
    PQclear(r);
    return ok;
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
    const char *params[] = {id};
    PGresult *r = PQexecParams(conn, by_id_sql, 1, NULL, params, NULL, NULL, 0);
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

/* ---- answers ------------------------------------------------------------------------ */

json_t *vf_folder_json(svc *s, const ts_caller *caller, const char *id, http_resp *resp)
{
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) return NULL;
    const char *p[] = {caller->user_id, id};
    PGresult *r = pgjson_query(conn, resp, "read vfolder",
                               "SELECT" FCOLS FJOIN " WHERE v.id = $2::uuid", 2, p);
    json_t *o = NULL;
    if (r && PQntuples(r) == 1)
        o = _folder_json(caller, r, 0);
    else if (r)
        http_problem(resp, 404, "vfolder-not-found", "Virtual Folder Not Found",
                     "vfolder %s not found", id);
    PQclear(r);
    pgjson_put(s, conn);
    return o;
}

json_t *vf_folder_list(svc *s, const ts_caller *caller, bool all, const char *project_id,
                       bool trash, http_resp *resp)
{
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) return NULL;
    char *projects = _projects_literal(caller);
    /* all=true of a domain admin: its domain's folders but its superadmins' */
    char *hidden = _ctx_ids_literal(caller, "domain_superadmins");
    const char *params[] = {caller->user_id,
                            projects,
                            all ? "t" : "f",
                            caller_is_superadmin(caller) ? NULL : caller->domain_name,
                            project_id,
                            hidden,
                            trash ? "trash" : "ready"};
    static const char sql[] =
        "SELECT" FCOLS FJOIN " WHERE v.status = $7 AND ($5::uuid IS NULL OR v.group_id = $5::uuid)"
        " AND (($3::boolean AND ($4::text IS NULL OR v.domain_name = $4)"
        "       AND NOT (v.ownership_type = 'user' AND v.user_id = ANY($6::uuid[])))"
        "   OR v.user_id = $1::uuid"
        "   OR (v.ownership_type = 'user' AND p.user_id IS NOT NULL AND $7 = 'ready')"
        "   OR (v.ownership_type = 'group' AND v.group_id = ANY($2::uuid[])))"
        " ORDER BY v.created_at, v.id";
    PGresult *r = pgjson_query(conn, resp, "list vfolders", sql, 7, params);
    free(projects);
    free(hidden);
    json_t *arr = NULL;
    if (r) {
        arr = json_array();
        for (int i = 0; i < PQntuples(r); i++)
            json_array_append_new(arr, _folder_json(caller, r, i));
        PQclear(r);
    }
    pgjson_put(s, conn);
    return arr;
}

const json_t *vf_folder_project_hosts(const ts_caller *caller, const vf_folder *f)
{
    return f->ownership == VF_OWNER_PROJECT
               ? json_object_get(vf_caller_project(caller, f->owner_id), "allowed_vfolder_hosts")
               : NULL;
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
