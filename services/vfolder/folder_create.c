/* folder_create.c: POST /folders (create) and POST /folders/{name}/clone
 * (folder_create.h): the owner's limits (count, quota scope size, allowed
 * hosts), the row and the directory made under the owner's lock, the copy
 * of a clone charged to the quota. */
#include "folder_create.h"

#include "events.h"
#include "libcommon/config.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "quota.h"
#include "request.h"
#include "volumes.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The project a create or clone names (`group`: a project id or a name in
 * the caller's domain): its id and *project, the context's project object
 * (allowed_vfolder_hosts, max_quota_scope_size; a new reference). Members are
 * found in the context; admins of other projects through auth's
 * session-context?group=. */
static bool _find_project(http_req *req, http_resp *resp, const ts_caller *c, const char *group,
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
static bool _insert_folder(svc *s, http_resp *resp, const ts_caller *c, const _new_folder *nf,
                           vf_folder *f)
{
    const vf_volume *vol = vf_volume_find(nf->host);
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    tlog_ctx_entity("folder", id); /* the lines below and the handler's after it */
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
    if (!vf_folder_read(conn, resp, id, f)) goto rollback;
    if (!vf_volume_create_dir(vol, id, nf->quota, &err)) {
        TLOG_ERROR("vfolder directory not created", "host=%s error=\"%s\"", nf->host, err.msg);
        http_problem(resp, 500, "internal-server-error", NULL, "could not create the folder: %s",
                     err.msg);
        goto rollback;
    }
    if (!pgjson_commit(conn, resp)) {
        if (!vf_volume_purge(vol, id, &err)) TLOG_WARN("cleanup failed", "error=\"%s\"", err.msg);
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
    /* Backend.AI's clients may send the quota as a size text ("0", "10g") */
    json_t *qv = json_object_get(body, "quota");
    if (json_is_string(qv)) {
        int64_t bytes = 0;
        if (!cfg_parse_bytes(json_string_value(qv), &bytes) || bytes < 0) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "\"quota\" must be a byte count (a number, or text like \"10g\")");
            return false;
        }
        json_object_set_new(body, "quota", json_integer(bytes));
    } else if (json_is_null(qv)) {
        json_object_del(body, "quota");
    }
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

/* The owner's limits: the project's policy (project: the context's project
 * object) or the caller's user policy. */
static void _owner_limits(_new_folder *nf, const ts_caller *c, const json_t *project)
{
    json_t *pmax = json_object_get(project, "max_quota_scope_size");
    json_t *pcount = json_object_get(project, "max_vfolder_count");
    nf->scope_max = !nf->project            ? vf_caller_max_quota_scope_size(c)
                    : json_is_integer(pmax) ? json_integer_value(pmax)
                                            : 0;
    nf->max_count = !nf->project              ? vf_caller_max_vfolder_count(c)
                    : json_is_integer(pcount) ? json_integer_value(pcount)
                                              : 0;
}

/* May the caller create folders on host (project_hosts: the project's policy
 * counts too)? False after a 403. */
static bool _may_create_on(const ts_caller *c, const json_t *project_hosts, const char *host,
                           http_resp *resp)
{
    if (vf_caller_host_allows(c, project_hosts, host, VF_HOST_CREATE)) return true;
    http_problem(resp, 403, "forbidden", NULL,
                 "your policies do not allow creating vfolders on host %s", host);
    return false;
}

/* The new folder as info answers it, 201. */
static void _reply_created(vf_req *x, const vf_folder *f)
{
    json_t *o = vf_folder_json(x->fr.s, &x->c, f->id, x->fr.resp);
    if (o) http_reply_json(x->fr.resp, 201, o);
}

void vf_h_create(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    if (!vf_req_begin(&x, ctx, req, resp)) return;
    json_t *project = NULL;
    static const char *const keys[] = {"name",           "host",       "group",     "group_id",
                                       "usage_mode",     "permission", "cloneable", "quota",
                                       "unmanaged_path", NULL};
    _new_folder nf = {.status = "ready"};
    const char *group = NULL, *group_id = NULL, *unmanaged = NULL;
    if (!vf_req_body(&x, keys) ||
        !pgjson_field_str(x.fr.body, "name", true, 1, 64, &nf.name, resp) ||
        !vf_name_ok(nf.name, "name", resp) || !_read_common(x.fr.body, "host", &nf, resp) ||
        !pgjson_field_str(x.fr.body, "group", false, 1, 256, &group, resp) ||
        !pgjson_field_str(x.fr.body, "group_id", false, 1, 256, &group_id, resp) ||
        !pgjson_field_str(x.fr.body, "unmanaged_path", false, 0, 4096, &unmanaged, resp))
        goto out;
    if (unmanaged && *unmanaged) {
        http_problem(resp, 400, "invalid-api-params", NULL, "unmanaged_path is not supported");
        goto out;
    }
    if (!group) group = group_id;
    if (group) {
        nf.project = true;
        if (!_find_project(req, resp, &x.c, group, nf.owner_id, &project)) goto out;
        /* Project folders are created by administrators (Backend.AI's rule). */
        if (!vf_caller_admin_of(&x.c, x.c.domain_name)) {
            http_problem(resp, 403, "forbidden", NULL,
                         "only domain admins and superadmins create project vfolders");
            goto out;
        }
    } else {
        ts_strlcpy(nf.owner_id, x.c.user_id, sizeof(nf.owner_id));
    }
    if (!_may_create_on(&x.c, json_object_get(project, "allowed_vfolder_hosts"), nf.host, resp))
        goto out;
    _owner_limits(&nf, &x.c, project);
    if (nf.scope_max > 0 && nf.quota > nf.scope_max) {
        http_problem(resp, 412, "quota-exceeded", "Quota Exceeded",
                     "quota %" PRId64 " is above the %s quota scope size %" PRId64, nf.quota,
                     nf.project ? "project's" : "your", nf.scope_max);
        goto out;
    }
    vf_folder f;
    if (!_insert_folder(x.fr.s, resp, &x.c, &nf, &f)) goto out;
    char qname[2 * VF_NAME_MAX];
    TLOG_INFO("vfolder created", "name=%s host=%s owner=%s",
              tlog_quote(qname, sizeof(qname), f.name), f.host, f.owner_id);
    vf_event_created(x.fr.s, req->request_id, &f, x.c.user_id);
    _reply_created(&x, &f);
out:
    json_decref(project);
    vf_req_end(&x);
}

/* The clone's copy failed or passed the quota: its directory and row go
 * (the answer says why afterwards). */
static void _drop_clone(vf_req *x, const vf_folder *f)
{
    ts_err err = {{0}};
    if (!vf_volume_purge(vf_volume_find(f->host), f->id, &err))
        TLOG_WARN("clone cleanup failed", "error=\"%s\"", err.msg);
    const char *p[] = {f->id};
    TS_IGNORE(vf_req_exec(x, "drop clone", "DELETE FROM vfolder.vfolders WHERE id = $1::uuid", 1,
                          p)); /* a row left 'cloning' is no folder anyone sees */
}

void vf_h_clone(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    if (!vf_req_begin(&x, ctx, req, resp)) return;
    static const char *const keys[] = {"target_name", "target_host", "usage_mode", "permission",
                                       "cloneable",   "quota",       NULL};
    _new_folder nf = {.status = "cloning"};
    if (!vf_req_body(&x, keys) ||
        !pgjson_field_str(x.fr.body, "target_name", true, 1, 64, &nf.name, resp) ||
        !vf_name_ok(nf.name, "target_name", resp) ||
        !_read_common(x.fr.body, "target_host", &nf, resp) || !vf_req_folder(&x, VF_PERM_RO))
        goto out;
    const vf_folder *src = &x.f;
    if (!src->cloneable && !(src->perm == VF_PERM_OWNER && !src->via_admin)) {
        http_problem(resp, 403, "forbidden", NULL, "vfolder %s is not cloneable", src->name);
        goto out;
    }
    if (!json_object_get(x.fr.body, "usage_mode")) nf.usage_mode = src->usage_mode;
    ts_strlcpy(nf.owner_id, x.c.user_id, sizeof(nf.owner_id));
    _owner_limits(&nf, &x.c, NULL);
    if (!_may_create_on(&x.c, NULL, nf.host, resp)) goto out;
    /* Past the clone's own quota: refused before copying (on XFS with
     * project quotas the copy itself would hit the project's limit). */
    int64_t src_bytes = 0;
    ts_err du_err = {{0}};
    if (nf.quota > 0 && vf_volume_du(src->host_path, &src_bytes, &du_err) && src_bytes > nf.quota) {
        http_problem(resp, 412, "quota-exceeded", "Quota Exceeded",
                     "vfolder %s holds %" PRId64 " bytes, more than the clone's quota %" PRId64,
                     src->name, src_bytes, nf.quota);
        goto out;
    }
    vf_folder f;
    if (!_insert_folder(x.fr.s, resp, &x.c, &nf, &f)) goto out;
    ts_err err = {{0}};
    int64_t bytes = 0;
    vf_quota_rc rc = VF_QUOTA_ERROR;
    bool copied = vf_volume_clone(vf_volume_find(src->host), src->id, vf_volume_find(f.host), f.id,
                                  &bytes, &err);
    if (copied) rc = vf_quota_charge(x.fr.s, f.id, bytes, req->request_id, &err);
    if (!copied || rc != VF_QUOTA_OK) {
        _drop_clone(&x, &f);
        if (!copied) {
            TLOG_ERROR("clone failed", "source=%s error=\"%s\"", src->id, err.msg);
            http_problem(resp, 500, "internal-server-error", NULL, "clone failed: %s", err.msg);
        } else {
            vf_quota_problem(resp, rc, &f, bytes, &err);
        }
        goto out;
    }
    const char *p[] = {f.id};
    if (!vf_req_exec(&x, "finish clone",
                     "UPDATE vfolder.vfolders SET status = 'ready' WHERE id = $1::uuid", 1, p))
        goto out;
    TLOG_INFO("vfolder cloned", "source=%s bytes=%" PRId64, src->id, bytes);
    vf_event_created(x.fr.s, req->request_id, &f, x.c.user_id);
    _reply_created(&x, &f);
out:
    vf_req_end(&x);
}
