/* folder_routes.c: reading folders and naming them (folder_routes.h): the
 * list, one folder's info, the hosts the caller may use, the volumes'
 * capacity, rename. */
#include "folder_routes.h"

#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "quota.h"
#include "request.h"
#include "volumes.h"

#include <stdlib.h>
#include <string.h>

static bool _truthy(const char *v)
{
    return v && (strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcmp(v, "yes") == 0);
}

void vf_h_list(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    if (!vf_req_begin(&x, ctx, req, resp)) return;
    bool all = _truthy(http_query_arg(req, "all"));
    const char *group = http_query_arg(req, "group_id");
    if (!group) group = http_query_arg(req, "group");
    const char *status = http_query_arg(req, "status");
    if (group && !ts_uuid_valid(group)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "group_id must be a project id");
    } else if (status && strcmp(status, "ready") != 0 && strcmp(status, "trash") != 0) {
        http_problem(resp, 400, "invalid-api-params", NULL, "status must be ready or trash");
    } else if (all && !vf_caller_admin_of(&x.c, x.c.domain_name)) {
        http_problem(resp, 403, "forbidden", NULL, "all=true is for administrators");
    } else {
        bool trash = status && strcmp(status, "trash") == 0;
        json_t *arr = vf_folder_list(x.fr.s, &x.c, all, group, trash, resp);
        if (arr) http_reply_json(resp, 200, arr);
    }
    vf_req_end(&x);
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
    vf_req x;
    if (!vf_req_begin(&x, ctx, req, resp)) return;
    bool super = caller_is_superadmin(&x.c);
    json_t *allowed_map = vf_caller_allowed_hosts(&x.c, NULL);
    json_t *allowed = json_array(), *info = json_object();
    for (size_t i = 0; i < vf_volume_count(); i++) {
        const vf_volume *v = vf_volume_at(i);
        json_t *perms = json_object_get(allowed_map, v->name);
        if (!super && !perms) continue;
        json_array_append_new(allowed, json_string(v->name));
        json_t *caps = json_pack("[s]", "vfolder");
        if (v->xfs_quota) json_array_append_new(caps, json_string("quota"));
        json_object_set_new(info, v->name,
                            json_pack("{s:s, s:o, s:O}", "backend", v->xfs_quota ? "xfs" : "vfs",
                                      "capabilities", caps, "permissions",
                                      perms ? perms : json_null()));
    }
    const char *def = vf_cfg.default_host;
    bool def_ok = vf_volume_find(def) && (super || json_object_get(allowed_map, def));
    http_reply_json(resp, 200,
                    json_pack("{s:o, s:o, s:o}", "default", def_ok ? json_string(def) : json_null(),
                              "allowed", allowed, "volume_info", info));
    json_decref(allowed_map);
    vf_req_end(&x);
}

/* One volume's capacity (statvfs) and accounting (acct: _accounting's). */
static json_t *_volume_json(const vf_volume *v, const json_t *acct, bool super)
{
    int64_t total = 0, avail = 0;
    ts_err err = {{0}};
    bool cap = vf_volume_capacity(v, &total, &avail, &err);
    json_t *a = json_object_get(acct, v->name);
    json_t *o = json_pack(
        "{s:s, s:s, s:b, s:b, s:o, s:o, s:o, s:I, s:I, s:I}", "name", v->name, "fs_type",
        v->fs_type, "xfs_quota", v->xfs_quota, "default", strcmp(v->name, vf_cfg.default_host) == 0,
        "capacity_bytes", cap ? json_integer(total) : json_null(), "available_bytes",
        cap ? json_integer(avail) : json_null(), "used_bytes",
        cap ? json_integer(total - avail) : json_null(), "accounted_bytes",
        (json_int_t)json_integer_value(json_object_get(a, "bytes")), "folders",
        (json_int_t)json_integer_value(json_object_get(a, "folders")), "trashed_folders",
        (json_int_t)json_integer_value(json_object_get(a, "trashed")));
    if (super) json_object_set_new(o, "path", json_string(v->path));
    if (!cap) json_object_set_new(o, "error", json_string(err.msg));
    return o;
}

void vf_h_volumes(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    if (!vf_req_begin(&x, ctx, req, resp)) return;
    json_t *acct = NULL;
    if (!vf_caller_admin_of(&x.c, x.c.domain_name)) {
        http_problem(resp, 403, "forbidden", NULL, "volume capacity is for administrators");
    } else if ((acct = _accounting(x.fr.s, resp)) != NULL) {
        json_t *items = json_array();
        for (size_t i = 0; i < vf_volume_count(); i++)
            json_array_append_new(items,
                                  _volume_json(vf_volume_at(i), acct, caller_is_superadmin(&x.c)));
        http_reply_json(resp, 200, json_pack("{s:o}", "volumes", items));
    }
    json_decref(acct);
    vf_req_end(&x);
}

void vf_h_info(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    if (!vf_req_begin(&x, ctx, req, resp)) return;
    if (vf_req_folder(&x, VF_PERM_RO)) {
        const vf_folder *f = &x.f;
        /* The owner's current quota scope limit follows its policy. */
        vf_quota_scope_refresh(x.fr.s, &x.c, f);
        json_t *o = vf_folder_json(x.fr.s, &x.c, f->id, resp);
        if (o) {
            int64_t used = 0, limit = 0, sused = 0, slimit = 0;
            ts_err err = {{0}};
            if ((!f->via_admin || f->perm >= VF_PERM_OWNER) &&
                vf_usage(x.fr.s, f, &used, &limit, &sused, &slimit, &err))
                json_object_set_new(o, "quota_scope",
                                    json_pack("{s:s, s:I, s:I}", "id", f->quota_scope, "used_bytes",
                                              (json_int_t)sused, "limit_bytes",
                                              (json_int_t)slimit));
            json_object_set_new(o, "numFiles", json_integer(0));
            http_reply_json(resp, 200, o);
        }
    }
    vf_req_end(&x);
}

/* Backend.AI's name-to-id lookup, which its Python client makes before
 * every operation on a folder by name: the name in the body (name,
 * vfolder_name, vfolderName; the client sends a GET with a JSON body) or
 * the query; a folder in the trash is found too (the client restores and
 * purges by name). */
void vf_h_id(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    if (!vf_req_begin(&x, ctx, req, resp)) return;
    static const char *const keys[] = {"name", "vfolder_name", "vfolderName", NULL};
    const char *name = NULL;
    if (req->body_len > 0) {
        if (!vf_req_body(&x, keys)) goto out;
        for (const char *const *k = keys; *k && !name; k++)
            if (!pgjson_field_str(x.fr.body, *k, false, 1, 256, &name, resp)) goto out;
    }
    for (const char *const *k = keys; *k && !name; k++)
        name = http_query_arg(req, *k);
    if (!name || !*name) {
        http_problem(resp, 400, "invalid-api-params", NULL, "name is required");
        goto out;
    }
    x.name = name;
    bool found = vf_req_folder(&x, VF_PERM_RO);
    if (!found && http_resp_status(resp) == 404) /* its answer is replaced */
        found = vf_resolve_trashed(x.fr.s, &x.c, name, &x.f, resp);
    if (found) http_reply_json(resp, 200, json_pack("{s:s, s:s}", "id", x.f.id, "name", x.f.name));
out:
    vf_req_end(&x);
}

/* Backend.AI's list of every volume (superadmins): what _/hosts answers
 * them, which is every configured volume. */
void vf_h_all_hosts(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    if (!vf_req_begin(&x, ctx, req, resp)) return;
    bool super = caller_is_superadmin(&x.c);
    vf_req_end(&x);
    if (super)
        vf_h_hosts(req, resp, ctx);
    else
        http_problem(resp, 403, "forbidden", NULL, "the list of every volume is for superadmins");
}

void vf_h_rename(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    if (!vf_req_begin(&x, ctx, req, resp)) return;
    const char *new_name = NULL;
    static const char *const keys[] = {"new_name", NULL};
    if (!vf_req_body(&x, keys) ||
        !pgjson_field_str(x.fr.body, "new_name", true, 1, 64, &new_name, resp) ||
        !vf_name_ok(new_name, "new_name", resp) || !vf_req_folder(&x, VF_PERM_OWNER) ||
        !vf_req_host_allows(&x, VF_HOST_MODIFY, false, "modifying vfolders on"))
        goto out;
    const char *p[] = {x.f.id, new_name};
    if (!vf_req_exec(
            &x, "rename vfolder",
            "UPDATE vfolder.vfolders SET name = $2 WHERE id = $1::uuid AND status = 'ready'", 2,
            p)) {
        if (http_resp_status(resp) == 409)
            http_problem(resp, 409, "already-exists", NULL, "a vfolder named %s already exists",
                         new_name);
        goto out;
    }
    char from[2 * VF_NAME_MAX], to[2 * VF_NAME_MAX];
    TLOG_INFO("vfolder renamed", "from=%s to=%s", tlog_quote(from, sizeof(from), x.f.name),
              tlog_quote(to, sizeof(to), new_name));
    http_reply_json(resp, 201, json_pack("{s:s, s:s}", "id", x.f.id, "name", new_name));
out:
    vf_req_end(&x);
}

/* Backend.AI's list of folder types a caller may create: "user" for
 * everyone, "group" (project folders) for the administrators who may create
 * them (folder_create.c's rule). */
void vf_h_allowed_types(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    if (!vf_req_begin(&x, ctx, req, resp)) return;
    json_t *types = json_pack("[s]", "user");
    if (vf_caller_admin_of(&x.c, x.c.domain_name))
        json_array_append_new(types, json_string("group"));
    http_reply_json(resp, 200, types);
    vf_req_end(&x);
}

void vf_h_update_options(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    if (!vf_req_begin(&x, ctx, req, resp)) return;
    static const char *const keys[] = {"permission", "cloneable", NULL};
    const char *perm = NULL;
    bool cloneable = false, has_cloneable = false;
    /* Every field checked before the folder is even looked up: bad input
     * changes nothing. */
    if (!vf_req_body(&x, keys) ||
        !pgjson_field_enum(x.fr.body, "permission", false, "ro|rw|wd", &perm, resp) ||
        !pgjson_field_bool(x.fr.body, "cloneable", false, &cloneable, &has_cloneable, resp) ||
        !vf_req_folder(&x, VF_PERM_OWNER) ||
        !vf_req_host_allows(&x, VF_HOST_MODIFY, false, "modifying vfolders on"))
        goto out;
    const char *p[] = {x.f.id, perm, has_cloneable ? (cloneable ? "true" : "false") : NULL};
    if (!vf_req_exec(&x, "update vfolder options",
                     "UPDATE vfolder.vfolders SET permission = coalesce($2, permission),"
                     " cloneable = coalesce($3::boolean, cloneable)"
                     " WHERE id = $1::uuid AND status = 'ready'",
                     3, p))
        goto out;
    const char *now_perm = perm ? perm : vf_perm_name(x.f.folder_perm);
    bool now_cloneable = has_cloneable ? cloneable : x.f.cloneable;
    TLOG_INFO("vfolder options updated", "permission=%s cloneable=%d", now_perm, now_cloneable);
    http_reply_json(resp, 200,
                    json_pack("{s:s, s:s, s:s, s:b}", "msg", "", "id", x.f.id, "permission",
                              now_perm, "cloneable", now_cloneable));
out:
    vf_req_end(&x);
}
