/* sharing.c: invitations to user folders (invite, list, accept, reject or
 * cancel, leave) and per-user permissions on project folders (share,
 * unshare). See sharing.h. */
#include "sharing.h"

#include "caller.h"
#include "events.h"
#include "http_api.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"

#include <stdlib.h>
#include <string.h>

#define VF_MAX_EMAILS 100

/* The "emails" array: 1..VF_MAX_EMAILS strings of 3..254 bytes. */
static bool _emails(json_t *body, http_resp *resp)
{
    json_t *emails = json_object_get(body, "emails");
    if (!json_is_array(emails) || json_array_size(emails) == 0 ||
        json_array_size(emails) > VF_MAX_EMAILS) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "emails must be an array of 1 to %d email addresses", VF_MAX_EMAILS);
        return false;
    }
    size_t i;
    json_t *e;
    json_array_foreach(emails, i, e)
    {
        const char *s = json_string_value(e);
        if (!s || strlen(s) < 3 || strlen(s) > 254 || !strchr(s, '@')) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "emails[%zu] is not an email address", i);
            return false;
        }
    }
    return true;
}

/* Look up a user by email through auth; false after a problem (404 unknown,
 * 503 auth down). */
static bool _lookup(http_req *req, http_resp *resp, const char *email, json_t **user)
{
    long status = 0;
    ts_err err = {{0}};
    if (!vf_user_lookup(email, req->request_id, &status, user, &err)) {
        http_problem(resp, 503, "service-unavailable", NULL, "%s", err.msg);
        return false;
    }
    if (status == 404) {
        json_decref(*user);
        *user = NULL;
        http_problem(resp, 404, "not-found", NULL, "no user with email %s", email);
        return false;
    }
    if (status != 200 || !json_string_value(json_object_get(*user, "id"))) {
        json_decref(*user);
        *user = NULL;
        http_problem(resp, 503, "service-unavailable", NULL,
                     "tessera-auth answered %ld to the user look-up", status);
        return false;
    }
    return true;
}

/* ---- invitations ------------------------------------------------------------------ */

void vf_h_invite(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    vf_caller c;
    if (!vf_caller_get(s, req, resp, &c)) return;
    json_t *body = http_json_body(req, resp), *users = json_array(), *ids = json_array();
    static const char *const keys[] = {"perm", "emails", "user_ids", NULL};
    const char *perm = NULL;
    vf_folder f;
    PGconn *conn = NULL;
    if (!body || !pgjson_only_keys(body, keys, resp) ||
        !pgjson_field_enum(body, "perm", false, "ro|rw|wd", &perm, resp) || !_emails(body, resp))
        goto out;
    if (!perm) perm = "rw";
    if (!vf_resolve(s, &c, http_param(req, "name"), VF_PERM_OWNER, &f, resp)) goto out;
    if (f.ownership != VF_OWNER_USER) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "vfolder %s belongs to a project: use share to give its members access",
                     f.name);
        goto out;
    }
    if (!vf_caller_host_allows(&c, NULL, f.host, VF_HOST_INVITE) &&
        !vf_caller_admin_of(&c, f.domain_name)) {
        http_problem(resp, 403, "forbidden", NULL,
                     "your policies do not allow inviting others on host %s", f.host);
        goto out;
    }
    /* Every invitee must exist, be active, be in the folder's domain and not
     * be the owner; otherwise nothing is invited. */
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(body, "emails"), i, e)
    {
        json_t *u = NULL;
        if (!_lookup(req, resp, json_string_value(e), &u)) goto out;
        const char *uid = json_string_value(json_object_get(u, "id"));
        const char *dom = json_string_value(json_object_get(u, "domain_name"));
        const char *st = json_string_value(json_object_get(u, "status"));
        const char *why = NULL;
        if (strcmp(uid, f.owner_id) == 0)
            why = "is the owner";
        else if (!dom || strcmp(dom, f.domain_name) != 0)
            why = "is not in the vfolder's domain";
        else if (!st || strcmp(st, "active") != 0)
            why = "is not active";
        if (why) {
            http_problem(resp, 400, "invalid-api-params", NULL, "%s %s", json_string_value(e), why);
            json_decref(u);
            goto out;
        }
        json_array_append_new(users, u);
    }
    conn = pgjson_get(s, resp);
    if (!conn || !pgjson_begin(conn, resp)) goto out;
    json_t *u;
    json_array_foreach(users, i, u)
    {
        char id[TS_UUID_STRLEN];
        ts_uuid4(id);
        const char *p[] = {id,
                           f.id,
                           c.user_id,
                           c.email,
                           json_string_value(json_object_get(u, "email")),
                           json_string_value(json_object_get(u, "id")),
                           perm};
        /* Already pending, or already holding a permission: skipped. */
        PGresult *r = pgjson_query(
            conn, resp, "invite",
            "INSERT INTO vfolder.invitations (id, vfolder_id, inviter_id, inviter_email,"
            " invitee_email, invitee_id, perm) SELECT $1, $2, $3, $4, $5, $6, $7"
            " WHERE NOT EXISTS (SELECT 1 FROM vfolder.permissions WHERE vfolder_id = $2::uuid"
            "   AND user_id = $6::uuid)"
            " ON CONFLICT (vfolder_id, lower(invitee_email)) WHERE state = 'pending' DO NOTHING"
            " RETURNING id::text",
            7, p);
        if (!r) {
            pg_rollback(conn);
            goto out;
        }
        if (PQntuples(r) == 1) json_array_append_new(ids, json_string(PQgetvalue(r, 0, 0)));
        PQclear(r);
    }
    if (!pgjson_commit(conn, resp)) {
        pg_rollback(conn);
        goto out;
    }
    TLOG_INFO("vfolder invitations", "vfolder=%s invited=%zu user=%s", f.id, json_array_size(ids),
              c.user_id);
    http_reply_json(resp, 201, json_pack("{s:O}", "invited_ids", ids));
out:
    if (conn) pgjson_put(s, conn);
    json_decref(ids);
    json_decref(users);
    json_decref(body);
    vf_caller_free(&c);
}

void vf_h_invitations(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    vf_caller c;
    if (!vf_caller_get(s, req, resp, &c)) return;
    PGconn *conn = pgjson_get(s, resp);
    if (conn) {
        const char *p[] = {c.email};
        PGresult *r = pgjson_query(
            conn, resp, "list invitations",
            "SELECT i.id::text AS id, i.inviter_email AS inviter, i.invitee_email AS invitee,"
            " i.perm, i.perm AS mount_permission, i.state, i.created_at, i.modified_at,"
            " v.id::text AS vfolder_id, v.name AS vfolder_name"
            " FROM vfolder.invitations i JOIN vfolder.vfolders v ON v.id = i.vfolder_id"
            " WHERE lower(i.invitee_email) = lower($1) AND i.state = 'pending'"
            " AND v.status = 'ready' ORDER BY i.created_at",
            1, p);
        if (r) {
            http_reply_json(resp, 200, json_pack("{s:o}", "invitations", pgjson_rows_json(r)));
            PQclear(r);
        }
        pgjson_put(s, conn);
    }
    vf_caller_free(&c);
}

/* The invitation id of an accept or delete body ("inv_id", Backend.AI's name). */
static bool _inv_id(http_req *req, http_resp *resp, json_t **body, const char **id)
{
    *body = http_json_body(req, resp);
    if (!*body) return false;
    static const char *const keys[] = {"inv_id", NULL};
    return pgjson_only_keys(*body, keys, resp) &&
           pgjson_field_uuid(*body, "inv_id", true, id, resp);
}

void vf_h_accept(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    vf_caller c;
    if (!vf_caller_get(s, req, resp, &c)) return;
    json_t *body = NULL;
    const char *id = NULL;
    PGconn *conn = NULL;
    PGresult *r = NULL;
    if (!_inv_id(req, resp, &body, &id)) goto out;
    conn = pgjson_get(s, resp);
    if (!conn || !pgjson_begin(conn, resp)) goto out;
    const char *p[] = {id, c.email, c.user_id};
    r = pgjson_query(conn, resp, "read invitation",
                     "SELECT i.vfolder_id::text, i.perm, v.name, i.inviter_id::text"
                     " FROM vfolder.invitations i JOIN vfolder.vfolders v ON v.id = i.vfolder_id"
                     " WHERE i.id = $1::uuid AND lower(i.invitee_email) = lower($2)"
                     " AND i.state = 'pending' AND v.status = 'ready' AND $3::uuid IS NOT NULL"
                     " FOR UPDATE OF i",
                     3, p);
    if (!r) goto rollback;
    if (PQntuples(r) != 1) {
        http_problem(resp, 404, "not-found", NULL, "no pending invitation %s for you", id);
        goto rollback;
    }
    char vid[TS_UUID_STRLEN], perm[8], name[VF_NAME_MAX], inviter[TS_UUID_STRLEN];
    ts_strlcpy(vid, PQgetvalue(r, 0, 0), sizeof(vid));
    ts_strlcpy(perm, PQgetvalue(r, 0, 1), sizeof(perm));
    ts_strlcpy(name, PQgetvalue(r, 0, 2), sizeof(name));
    ts_strlcpy(inviter, PQgetvalue(r, 0, 3), sizeof(inviter));
    PQclear(r);
    /* Backend.AI's rule: you cannot accept a folder named like one of yours. */
    const char *p2[] = {c.user_id, name};
    r = pgjson_query(conn, resp, "name clash",
                     "SELECT 1 FROM vfolder.vfolders WHERE user_id = $1::uuid AND name = $2"
                     " AND status NOT IN ('trash', 'purging', 'purged')",
                     2, p2);
    if (!r) goto rollback;
    if (PQntuples(r) > 0) {
        http_problem(resp, 409, "already-exists", NULL,
                     "you own a vfolder named %s: rename it before accepting", name);
        goto rollback;
    }
    PQclear(r);
    const char *p3[] = {vid, c.user_id, perm, id};
    r = pgjson_query(conn, resp, "accept invitation",
                     "WITH a AS (UPDATE vfolder.invitations SET state = 'accepted',"
                     "   invitee_id = $2::uuid, modified_at = now() WHERE id = $4::uuid)"
                     " INSERT INTO vfolder.permissions (vfolder_id, user_id, perm, source)"
                     " VALUES ($1, $2, $3, 'invitation') ON CONFLICT (vfolder_id, user_id)"
                     " DO UPDATE SET perm = EXCLUDED.perm, source = 'invitation'",
                     4, p3);
    if (!r) goto rollback;
    PQclear(r);
    r = NULL;
    if (!pgjson_commit(conn, resp)) goto rollback;
    TLOG_INFO("invitation accepted", "vfolder=%s invitation=%s user=%s perm=%s", vid, id, c.user_id,
              perm);
    vf_event_shared(s, req->request_id, vid, c.user_id, perm, inviter, id, false);
    http_reply_json(resp, 200, json_object());
    goto out;
rollback:
    if (r) PQclear(r);
    pg_rollback(conn);
out:
    if (conn) pgjson_put(s, conn);
    json_decref(body);
    vf_caller_free(&c);
}

/* DELETE /invitations/delete: the invitee rejects, the inviter (or the
 * folder's owner or an admin of its domain) cancels. */
void vf_h_reject(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    vf_caller c;
    if (!vf_caller_get(s, req, resp, &c)) return;
    json_t *body = NULL;
    const char *id = NULL;
    PGconn *conn = NULL;
    if (!_inv_id(req, resp, &body, &id)) goto out;
    conn = pgjson_get(s, resp);
    if (!conn) goto out;
    const char *p[] = {id};
    PGresult *r = pgjson_query(conn, resp, "read invitation",
                               "SELECT i.invitee_email, i.inviter_id::text, v.user_id::text,"
                               " v.domain_name FROM vfolder.invitations i JOIN vfolder.vfolders v"
                               " ON v.id = i.vfolder_id WHERE i.id = $1::uuid"
                               " AND i.state = 'pending'",
                               1, p);
    if (!r) goto out;
    const char *state = NULL;
    if (PQntuples(r) == 1) {
        if (strcasecmp(PQgetvalue(r, 0, 0), c.email) == 0)
            state = "rejected";
        else if (strcmp(PQgetvalue(r, 0, 1), c.user_id) == 0 ||
                 strcmp(PQgetvalue(r, 0, 2), c.user_id) == 0 ||
                 vf_caller_admin_of(&c, PQgetvalue(r, 0, 3)))
            state = "canceled";
    }
    PQclear(r);
    if (!state) {
        http_problem(resp, 404, "not-found", NULL, "no pending invitation %s for you", id);
        goto out;
    }
    const char *p2[] = {id, state};
    r = pgjson_query(conn, resp, "close invitation",
                     "UPDATE vfolder.invitations SET state = $2, modified_at = now()"
                     " WHERE id = $1::uuid AND state = 'pending'",
                     2, p2);
    if (r) {
        TLOG_INFO("invitation closed", "invitation=%s state=%s user=%s", id, state, c.user_id);
        http_reply_json(resp, 200, json_pack("{s:s}", "state", state));
        PQclear(r);
    }
out:
    if (conn) pgjson_put(s, conn);
    json_decref(body);
    vf_caller_free(&c);
}

void vf_h_leave(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    vf_caller c;
    if (!vf_caller_get(s, req, resp, &c)) return;
    vf_folder f;
    if (!vf_resolve(s, &c, http_param(req, "name"), VF_PERM_RO, &f, resp)) goto out;
    if (f.ownership != VF_OWNER_USER) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "vfolder %s belongs to a project: leave the project instead", f.name);
        goto out;
    }
    if (strcmp(f.owner_id, c.user_id) == 0) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "you own vfolder %s: delete it instead of leaving", f.name);
        goto out;
    }
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) goto out;
    const char *p[] = {f.id, c.user_id};
    PGresult *r = pgjson_query(conn, resp, "leave vfolder",
                               "DELETE FROM vfolder.permissions WHERE vfolder_id = $1::uuid"
                               " AND user_id = $2::uuid",
                               2, p);
    if (r) {
        if (strcmp(PQcmdTuples(r), "1") == 0) {
            TLOG_INFO("vfolder left", "vfolder=%s user=%s", f.id, c.user_id);
            vf_event_shared(s, req->request_id, f.id, c.user_id, NULL, c.user_id, NULL, true);
            http_reply_json(resp, 200, json_object());
        } else {
            http_problem(resp, 400, "invalid-api-params", NULL, "vfolder %s is not shared with you",
                         f.name);
        }
        PQclear(r);
    }
    pgjson_put(s, conn);
out:
    vf_caller_free(&c);
}

/* ---- project folders: per-user permissions -------------------------------------------- */

/* share (perm) or unshare (perm NULL). */
static void _share(http_req *req, http_resp *resp, svc *s, bool share)
{
    vf_caller c;
    if (!vf_caller_get(s, req, resp, &c)) return;
    json_t *body = http_json_body(req, resp), *users = json_array(), *done = json_array();
    static const char *const share_keys[] = {"permission", "perm", "emails", NULL};
    static const char *const unshare_keys[] = {"emails", NULL};
    const char *perm = NULL, *perm2 = NULL;
    vf_folder f;
    PGconn *conn = NULL;
    if (!body || !pgjson_only_keys(body, share ? share_keys : unshare_keys, resp) ||
        !_emails(body, resp))
        goto out;
    if (share && (!pgjson_field_enum(body, "permission", false, "ro|rw|wd", &perm, resp) ||
                  !pgjson_field_enum(body, "perm", false, "ro|rw|wd", &perm2, resp)))
        goto out;
    if (!perm) perm = perm2 ? perm2 : "rw";
    if (!vf_resolve(s, &c, http_param(req, "name"), VF_PERM_OWNER, &f, resp)) goto out;
    if (f.ownership != VF_OWNER_PROJECT) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "vfolder %s is a user folder: use invite to share it", f.name);
        goto out;
    }
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(body, "emails"), i, e)
    {
        json_t *u = NULL;
        if (!_lookup(req, resp, json_string_value(e), &u)) goto out;
        bool member = false;
        size_t j;
        json_t *pid;
        json_array_foreach(json_object_get(u, "projects"), j, pid)
        {
            if (json_string_value(pid) && strcmp(json_string_value(pid), f.owner_id) == 0)
                member = true;
        }
        if (share && !member) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "%s is not a member of the vfolder's project", json_string_value(e));
            json_decref(u);
            goto out;
        }
        json_array_append_new(users, u);
    }
    conn = pgjson_get(s, resp);
    if (!conn || !pgjson_begin(conn, resp)) goto out;
    json_t *u;
    json_array_foreach(users, i, u)
    {
        const char *uid = json_string_value(json_object_get(u, "id"));
        const char *p[] = {f.id, uid, perm};
        PGresult *r =
            share
                ? pgjson_query(conn, resp, "share vfolder",
                               "INSERT INTO vfolder.permissions (vfolder_id, user_id, perm, source)"
                               " VALUES ($1, $2, $3, 'share') ON CONFLICT (vfolder_id, user_id)"
                               " DO UPDATE SET perm = EXCLUDED.perm, source = 'share'",
                               3, p)
                : pgjson_query(conn, resp, "unshare vfolder",
                               "DELETE FROM vfolder.permissions WHERE vfolder_id = $1::uuid"
                               " AND user_id = $2::uuid",
                               2, p);
        if (!r) {
            pg_rollback(conn);
            goto out;
        }
        if (share || strcmp(PQcmdTuples(r), "0") != 0)
            json_array_append(done, json_object_get(u, "email"));
        else
            json_object_set_new(u, "unchanged", json_true());
        PQclear(r);
    }
    if (!pgjson_commit(conn, resp)) {
        pg_rollback(conn);
        goto out;
    }
    json_array_foreach(users, i, u)
    {
        if (json_is_true(json_object_get(u, "unchanged"))) continue;
        vf_event_shared(s, req->request_id, f.id, json_string_value(json_object_get(u, "id")),
                        share ? perm : NULL, c.user_id, NULL, !share);
    }
    TLOG_INFO(share ? "vfolder shared" : "vfolder unshared", "vfolder=%s users=%zu user=%s", f.id,
              json_array_size(done), c.user_id);
    http_reply_json(resp, share ? 201 : 200,
                    json_pack("{s:O}", share ? "shared_emails" : "unshared_emails", done));
out:
    if (conn) pgjson_put(s, conn);
    json_decref(users);
    json_decref(done);
    json_decref(body);
    vf_caller_free(&c);
}

void vf_h_share(http_req *req, http_resp *resp, void *ctx)
{
    _share(req, resp, ctx, true);
}

void vf_h_unshare(http_req *req, http_resp *resp, void *ctx)
{
    _share(req, resp, ctx, false);
}
