/* shares.c: a folder's shared users, listed and changed (shares.h). */
#include "shares.h"

#include "events.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "request.h"

#include <string.h>

/* The folder id names, for its owner or an admin (x->f). False after a
 * problem: 404 unknown or invisible, 403 visible without ownership. */
static bool _owned(vf_req *x, const char *id)
{
    if (!vf_resolve(x->fr.s, &x->c, id, VF_PERM_OWNER, &x->f, x->fr.resp)) return false;
    tlog_ctx_entity("folder", x->f.id);
    return true;
}

void vf_h_shared_list(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    if (!vf_req_begin(&x, ctx, req, resp)) return;
    PGconn *conn = NULL;
    const char *vid = http_query_arg(req, "vfolder_id");
    if (!vid) vid = http_query_arg(req, "vfolderId");
    if (vid && !ts_uuid_valid(vid)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "vfolder_id must be a vfolder id");
        goto out;
    }
    if ((vid && !_owned(&x, vid)) || !(conn = pgjson_get(x.fr.s, resp))) goto out;
    /* The email of a user who came by invitation is the invitation's; a
     * project folder's override was set by email but keeps only the id. */
    const char *p[] = {vid ? x.f.id : NULL, x.c.user_id};
    PGresult *r = pgjson_query(
        conn, resp, "list shared users",
        "SELECT v.id::text AS vfolder_id, v.name AS vfolder_name, v.status,"
        " coalesce(v.user_id, v.group_id)::text AS owner, v.ownership_type AS type,"
        " p.user_id::text AS uuid, (SELECT i.invitee_email FROM vfolder.invitations i"
        "   WHERE i.vfolder_id = p.vfolder_id AND i.invitee_id = p.user_id"
        "   AND i.state = 'accepted' ORDER BY i.modified_at DESC LIMIT 1) AS email, p.perm"
        " FROM vfolder.permissions p JOIN vfolder.vfolders v ON v.id = p.vfolder_id"
        " WHERE v.status = 'ready' AND CASE WHEN $1::uuid IS NULL"
        "   THEN v.ownership_type = 'user' AND v.user_id = $2::uuid ELSE v.id = $1::uuid END"
        " ORDER BY v.name, p.created_at",
        2, p);
    if (!r) goto out;
    json_t *shared = json_array();
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *email = PQgetisnull(r, i, 6) ? json_null() : json_string(PQgetvalue(r, i, 6));
        json_array_append_new(
            shared, json_pack("{s:s, s:s, s:s, s:s, s:s, s:{s:s, s:o}, s:s}", "vfolder_id",
                              PQgetvalue(r, i, 0), "vfolder_name", PQgetvalue(r, i, 1), "status",
                              PQgetvalue(r, i, 2), "owner", PQgetvalue(r, i, 3), "type",
                              PQgetvalue(r, i, 4), "shared_to", "uuid", PQgetvalue(r, i, 5),
                              "email", email, "perm", PQgetvalue(r, i, 7)));
    }
    PQclear(r);
    http_reply_json(resp, 200, json_pack("{s:o}", "shared", shared));
out:
    if (conn) pgjson_put(x.fr.s, conn);
    vf_req_end(&x);
}

void vf_h_shared_update(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    if (!vf_req_begin(&x, ctx, req, resp)) return;
    static const char *const keys[] = {"vfolder", "user", "perm", "permission", NULL};
    const char *vid, *uid, *perm = NULL, *perm2 = NULL;
    if (!vf_req_body(&x, keys) || !pgjson_field_uuid(x.fr.body, "vfolder", true, &vid, resp) ||
        !pgjson_field_uuid(x.fr.body, "user", true, &uid, resp) ||
        !pgjson_field_enum(x.fr.body, "perm", false, "ro|rw|wd", &perm, resp) ||
        !pgjson_field_enum(x.fr.body, "permission", false, "ro|rw|wd", &perm2, resp))
        goto out;
    if (perm && perm2) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "give the permission once: perm or permission, not both");
        goto out;
    }
    if (!perm) perm = perm2;
    if (!_owned(&x, vid)) goto out;
    const char *p[] = {x.f.id, uid, perm};
    PGconn *conn = pgjson_get(x.fr.s, resp);
    if (!conn) goto out;
    PGresult *r = perm ? pgjson_query(conn, resp, "change shared permission",
                                      "UPDATE vfolder.permissions SET perm = $3"
                                      " WHERE vfolder_id = $1::uuid AND user_id = $2::uuid",
                                      3, p)
                       : pgjson_query(conn, resp, "remove shared permission",
                                      "DELETE FROM vfolder.permissions"
                                      " WHERE vfolder_id = $1::uuid AND user_id = $2::uuid",
                                      2, p);
    pgjson_put(x.fr.s, conn);
    if (!r) goto out;
    bool changed = strcmp(PQcmdTuples(r), "0") != 0;
    PQclear(r);
    if (!changed) {
        http_problem(resp, 404, "not-found", NULL, "vfolder %s is not shared with user %s",
                     x.f.name, uid);
        goto out;
    }
    TLOG_INFO(perm ? "shared permission changed" : "shared permission removed",
              "shared_to=%s perm=%s", uid, perm ? perm : "none");
    vf_event_shared(x.fr.s, req->request_id, x.f.id, uid, perm, x.c.user_id, NULL, perm == NULL);
    http_reply_json(resp, 200, json_pack("{s:s}", "msg", "shared vfolder permission updated"));
out:
    vf_req_end(&x);
}
