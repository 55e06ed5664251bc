/* sharing.c: invitations to user folders (invite, list, accept, reject or
 * cancel, leave) and per-user permissions on project folders (share,
 * unshare). See sharing.h. */
#include "sharing.h"

#include "events.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "request.h"

#include <stdlib.h>
#include <string.h>

#define VF_MAX_EMAILS 100

/* The "emails" array: 1..VF_MAX_EMAILS strings of 3..254 bytes; field:
 * the name the client gave it (invite's aliases), for the problem. */
static bool _emails(json_t *body, const char *field, http_resp *resp)
{
    json_t *emails = json_object_get(body, "emails");
    if (!json_is_array(emails) || json_array_size(emails) == 0 ||
        json_array_size(emails) > VF_MAX_EMAILS) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "%s must be an array of 1 to %d email addresses", field, VF_MAX_EMAILS);
        return false;
    }
    size_t i;
    json_t *e;
    json_array_foreach(emails, i, e)
    {
        const char *s = json_string_value(e);
        if (!s || strlen(s) < 3 || strlen(s) > 254 || !strchr(s, '@')) {
            http_problem(resp, 400, "invalid-api-params", NULL, "%s[%zu] is not an email address",
                         field, i);
            return false;
        }
    }
    return true;
}

/* Backend.AI's other names for invite's fields: the invitees as "user_ids"
 * (what the JS SDK 21.3.1 sends: the emails under that name) or "userIDs",
 * the permission as "permission". Moved to "emails" and "perm"; *field: the
 * invitees' name as sent. False after a 400 when two names are given. */
static bool _invite_aliases(json_t *body, const char **field, http_resp *resp)
{
    static const char *const names[] = {"user_ids", "userIDs"};
    *field = "emails";
    for (size_t i = 0; i < TS_ARRAY_LEN(names); i++) {
        json_t *v = json_object_get(body, names[i]);
        if (!v) continue;
        if (json_object_get(body, "emails")) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "give the invitees once: %s or %s, not both", *field, names[i]);
            return false;
        }
        json_object_set(body, "emails", v);
        json_object_del(body, names[i]);
        *field = names[i];
    }
    json_t *perm = json_object_get(body, "permission");
    if (perm) {
        if (json_object_get(body, "perm")) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "give the permission once: perm or permission, not both");
            return false;
        }
        json_object_set(body, "perm", perm);
        json_object_del(body, "permission");
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

/* Why user may not be given access to f (NULL: it may). */
typedef const char *(*_user_check)(const json_t *user, const vf_folder *f);

/* The users the body's "emails" name (looked up through auth), every one
 * passing check (may be NULL): a new array, or NULL after a problem
 * (404 unknown, 400 "<email> <why>", 503). */
static json_t *_users(vf_req *x, _user_check check)
{
    json_t *users = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(x->fr.body, "emails"), i, e)
    {
        json_t *u = NULL;
        const char *why = NULL;
        if (!_lookup(x->fr.req, x->fr.resp, json_string_value(e), &u) ||
            (check && (why = check(u, &x->f)) != NULL)) {
            if (why)
                http_problem(x->fr.resp, 400, "invalid-api-params", NULL, "%s %s",
                             json_string_value(e), why);
            json_decref(u);
            json_decref(users);
            return NULL;
        }
        json_array_append_new(users, u);
    }
    return users;
}

/* One user's row change, on conn inside the transaction; false after a
 * problem. */
typedef bool (*_user_change)(vf_req *x, PGconn *conn, json_t *user, void *arg);

/* change for every user, all in one transaction. False after a problem
 * (nothing changed). */
static bool _change_all(vf_req *x, json_t *users, _user_change change, void *arg)
{
    PGconn *conn = pgjson_get(x->fr.s, x->fr.resp);
    if (!conn) return false;
    bool ok = pgjson_begin(conn, x->fr.resp);
    if (ok) {
        size_t i;
        json_t *u;
        json_array_foreach(users, i, u) if (ok) ok = change(x, conn, u, arg);
        if (ok) ok = pgjson_commit(conn, x->fr.resp);
        if (!ok) pg_rollback(conn);
    }
    pgjson_put(x->fr.s, conn);
    return ok;
}

/* ---- invitations ------------------------------------------------------------------ */

/* Every invitee must exist, be active, be in the folder's domain and not be
 * the owner. */
static const char *_invitee_why(const json_t *u, const vf_folder *f)
{
    const char *uid = json_string_value(json_object_get(u, "id"));
    const char *dom = json_string_value(json_object_get(u, "domain_name"));
    const char *st = json_string_value(json_object_get(u, "status"));
    if (strcmp(uid, f->owner_id) == 0) return "is the owner";
    if (!dom || strcmp(dom, f->domain_name) != 0) return "is not in the vfolder's domain";
    if (!st || strcmp(st, "active") != 0) return "is not active";
    return NULL;
}

typedef struct _invite {
    const char *perm;
    json_t *ids; /* the invitations made */
} _invite;

/* Already pending, or already holding a permission: skipped. */
static bool _invite_one(vf_req *x, PGconn *conn, json_t *u, void *arg)
{
    _invite *inv = arg;
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    const char *p[] = {id,
                       x->f.id,
                       x->c.user_id,
                       x->c.email,
                       json_string_value(json_object_get(u, "email")),
                       json_string_value(json_object_get(u, "id")),
                       inv->perm};
    PGresult *r = pgjson_query(
        conn, x->fr.resp, "invite",
        "INSERT INTO vfolder.invitations (id, vfolder_id, inviter_id, inviter_email,"
        " invitee_email, invitee_id, perm) SELECT $1, $2, $3, $4, $5, $6, $7"
        " WHERE NOT EXISTS (SELECT 1 FROM vfolder.permissions WHERE vfolder_id = $2::uuid"
        "   AND user_id = $6::uuid)"
        " ON CONFLICT (vfolder_id, lower(invitee_email)) WHERE state = 'pending' DO NOTHING"
        " RETURNING id::text",
        7, p);
    if (!r) return false;
    if (PQntuples(r) == 1) json_array_append_new(inv->ids, json_string(PQgetvalue(r, 0, 0)));
    PQclear(r);
    return true;
}

void vf_h_invite(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    if (!vf_req_begin(&x, ctx, req, resp)) return;
    static const char *const keys[] = {"perm", "permission", "emails", "user_ids", "userIDs", NULL};
    _invite inv = {.ids = json_array()};
    json_t *users = NULL;
    const char *field = "emails";
    if (!vf_req_body(&x, keys) || !_invite_aliases(x.fr.body, &field, resp) ||
        !pgjson_field_enum(x.fr.body, "perm", false, "ro|rw|wd", &inv.perm, resp) ||
        !_emails(x.fr.body, field, resp) || !vf_req_folder(&x, VF_PERM_OWNER))
        goto out;
    if (!inv.perm) inv.perm = "rw";
    if (x.f.ownership != VF_OWNER_USER) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "vfolder %s belongs to a project: use share to give its members access",
                     x.f.name);
        goto out;
    }
    /* Otherwise nothing is invited. */
    if (!vf_req_host_allows(&x, VF_HOST_INVITE, false, "inviting others on") ||
        !(users = _users(&x, _invitee_why)) || !_change_all(&x, users, _invite_one, &inv))
        goto out;
    TLOG_INFO("vfolder invitations", "invited=%zu", json_array_size(inv.ids));
    http_reply_json(resp, 201, json_pack("{s:O}", "invited_ids", inv.ids));
out:
    json_decref(inv.ids);
    json_decref(users);
    vf_req_end(&x);
}

void vf_h_invitations(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    if (!vf_req_begin(&x, ctx, req, resp)) return;
    PGconn *conn = pgjson_get(x.fr.s, resp);
    if (conn) {
        const char *p[] = {x.c.email};
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
        pgjson_put(x.fr.s, conn);
    }
    vf_req_end(&x);
}

/* The caller and the invitation id of an accept or delete body ("inv_id",
 * Backend.AI's name). */
static bool _begin_invitation(vf_req *x, void *ctx, http_req *req, http_resp *resp, const char **id)
{
    static const char *const keys[] = {"inv_id", NULL};
    if (!vf_req_begin(x, ctx, req, resp) || !vf_req_body(x, keys) ||
        !pgjson_field_uuid(x->fr.body, "inv_id", true, id, resp))
        return false;
    tlog_ctx_entity("invitation", *id);
    return true;
}

/* The pending invitation id for the caller, in the transaction on conn
 * (locked): its folder id, perm, folder name and inviter. False after a
 * problem (404 when there is none). */
typedef struct _invitation {
    char vid[TS_UUID_STRLEN], perm[8], name[VF_NAME_MAX], inviter[TS_UUID_STRLEN];
} _invitation;

static bool _read_invitation(vf_req *x, PGconn *conn, const char *id, _invitation *out)
{
    const char *p[] = {id, x->c.email, x->c.user_id};
    PGresult *r =
        pgjson_query(conn, x->fr.resp, "read invitation",
                     "SELECT i.vfolder_id::text, i.perm, v.name, i.inviter_id::text"
                     " FROM vfolder.invitations i JOIN vfolder.vfolders v ON v.id = i.vfolder_id"
                     " WHERE i.id = $1::uuid AND lower(i.invitee_email) = lower($2)"
                     " AND i.state = 'pending' AND v.status = 'ready' AND $3::uuid IS NOT NULL"
                     " FOR UPDATE OF i",
                     3, p);
    if (!r) return false;
    bool ok = PQntuples(r) == 1;
    if (ok) {
        ts_strlcpy(out->vid, PQgetvalue(r, 0, 0), sizeof(out->vid));
        ts_strlcpy(out->perm, PQgetvalue(r, 0, 1), sizeof(out->perm));
        ts_strlcpy(out->name, PQgetvalue(r, 0, 2), sizeof(out->name));
        ts_strlcpy(out->inviter, PQgetvalue(r, 0, 3), sizeof(out->inviter));
    } else {
        http_problem(x->fr.resp, 404, "not-found", NULL, "no pending invitation %s for you", id);
    }
    PQclear(r);
    return ok;
}

/* Accept inv (the caller is its invitee) on conn, in the transaction. */
static bool _accept(vf_req *x, PGconn *conn, const char *id, const _invitation *inv)
{
    /* Backend.AI's rule: you cannot accept a folder named like one of yours. */
    const char *p2[] = {x->c.user_id, inv->name};
    PGresult *r = pgjson_query(conn, x->fr.resp, "name clash",
                               "SELECT 1 FROM vfolder.vfolders WHERE user_id = $1::uuid"
                               " AND name = $2 AND status NOT IN ('trash', 'purging', 'purged')",
                               2, p2);
    if (!r) return false;
    bool clash = PQntuples(r) > 0;
    PQclear(r);
    if (clash) {
        http_problem(x->fr.resp, 409, "already-exists", NULL,
                     "you own a vfolder named %s: rename it before accepting", inv->name);
        return false;
    }
    const char *p3[] = {inv->vid, x->c.user_id, inv->perm, id};
    r = pgjson_query(conn, x->fr.resp, "accept invitation",
                     "WITH a AS (UPDATE vfolder.invitations SET state = 'accepted',"
                     "   invitee_id = $2::uuid, modified_at = now() WHERE id = $4::uuid)"
                     " INSERT INTO vfolder.permissions (vfolder_id, user_id, perm, source)"
                     " VALUES ($1, $2, $3, 'invitation') ON CONFLICT (vfolder_id, user_id)"
                     " DO UPDATE SET perm = EXCLUDED.perm, source = 'invitation'",
                     4, p3);
    PQclear(r);
    return r != NULL;
}

void vf_h_accept(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    const char *id = NULL;
    PGconn *conn = NULL;
    if (!_begin_invitation(&x, ctx, req, resp, &id) || !(conn = pgjson_get(x.fr.s, resp))) goto out;
    _invitation inv;
    if (!pgjson_begin(conn, resp)) goto out;
    if (!_read_invitation(&x, conn, id, &inv) || !_accept(&x, conn, id, &inv) ||
        !pgjson_commit(conn, resp)) {
        pg_rollback(conn);
        goto out;
    }
    tlog_ctx_entity("folder", inv.vid);
    TLOG_INFO("invitation accepted", "invitation=%s perm=%s", id, inv.perm);
    vf_event_shared(x.fr.s, req->request_id, inv.vid, x.c.user_id, inv.perm, inv.inviter, id,
                    false);
    http_reply_json(resp, 200, json_object());
out:
    if (conn) pgjson_put(x.fr.s, conn);
    vf_req_end(&x);
}

/* DELETE /invitations/delete: the invitee rejects, the inviter (or the
 * folder's owner or an admin of its domain) cancels. */
void vf_h_reject(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    const char *id = NULL;
    PGconn *conn = NULL;
    if (!_begin_invitation(&x, ctx, req, resp, &id) || !(conn = pgjson_get(x.fr.s, resp))) goto out;
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
        if (strcasecmp(PQgetvalue(r, 0, 0), x.c.email) == 0)
            state = "rejected";
        else if (strcmp(PQgetvalue(r, 0, 1), x.c.user_id) == 0 ||
                 strcmp(PQgetvalue(r, 0, 2), x.c.user_id) == 0 ||
                 vf_caller_admin_of(&x.c, PQgetvalue(r, 0, 3)))
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
        TLOG_INFO("invitation closed", "state=%s", state);
        http_reply_json(resp, 200, json_pack("{s:s}", "state", state));
        PQclear(r);
    }
out:
    if (conn) pgjson_put(x.fr.s, conn);
    vf_req_end(&x);
}

void vf_h_leave(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    if (!vf_req_begin(&x, ctx, req, resp)) return;
    PGconn *conn = NULL;
    if (!vf_req_folder(&x, VF_PERM_RO)) goto out;
    if (x.f.ownership != VF_OWNER_USER) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "vfolder %s belongs to a project: leave the project instead", x.f.name);
        goto out;
    }
    if (strcmp(x.f.owner_id, x.c.user_id) == 0) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "you own vfolder %s: delete it instead of leaving", x.f.name);
        goto out;
    }
    if (!(conn = pgjson_get(x.fr.s, resp))) goto out;
    const char *p[] = {x.f.id, x.c.user_id};
    PGresult *r = pgjson_query(conn, resp, "leave vfolder",
                               "DELETE FROM vfolder.permissions WHERE vfolder_id = $1::uuid"
                               " AND user_id = $2::uuid",
                               2, p);
    if (r && strcmp(PQcmdTuples(r), "1") == 0) {
        TLOG_INFO("vfolder left", "");
        vf_event_shared(x.fr.s, req->request_id, x.f.id, x.c.user_id, NULL, x.c.user_id, NULL,
                        true);
        http_reply_json(resp, 200, json_object());
    } else if (r) {
        http_problem(resp, 400, "invalid-api-params", NULL, "vfolder %s is not shared with you",
                     x.f.name);
    }
    PQclear(r);
out:
    if (conn) pgjson_put(x.fr.s, conn);
    vf_req_end(&x);
}

/* ---- project folders: per-user permissions -------------------------------------------- */

static const char *_member_why(const json_t *u, const vf_folder *f)
{
    size_t j;
    json_t *pid;
    json_array_foreach(json_object_get(u, "projects"), j, pid)
    {
        if (json_string_value(pid) && strcmp(json_string_value(pid), f->owner_id) == 0) return NULL;
    }
    return "is not a member of the vfolder's project";
}

typedef struct _share {
    const char *perm; /* NULL: unshare */
    json_t *done;     /* the emails whose permission changed */
} _share;

static bool _share_one(vf_req *x, PGconn *conn, json_t *u, void *arg)
{
    _share *sh = arg;
    const char *p[] = {x->f.id, json_string_value(json_object_get(u, "id")), sh->perm};
    PGresult *r =
        sh->perm
            ? pgjson_query(conn, x->fr.resp, "share vfolder",
                           "INSERT INTO vfolder.permissions (vfolder_id, user_id, perm, source)"
                           " VALUES ($1, $2, $3, 'share') ON CONFLICT (vfolder_id, user_id)"
                           " DO UPDATE SET perm = EXCLUDED.perm, source = 'share'",
                           3, p)
            : pgjson_query(conn, x->fr.resp, "unshare vfolder",
                           "DELETE FROM vfolder.permissions WHERE vfolder_id = $1::uuid"
                           " AND user_id = $2::uuid",
                           2, p);
    if (!r) return false;
    if (sh->perm || strcmp(PQcmdTuples(r), "0") != 0)
        json_array_append(sh->done, json_object_get(u, "email"));
    else
        json_object_set_new(u, "unchanged", json_true());
    PQclear(r);
    return true;
}

/* share (a permission for members) or unshare (the override removed). */
static void _share_or_unshare(http_req *req, http_resp *resp, void *ctx, bool share)
{
    vf_req x;
    if (!vf_req_begin(&x, ctx, req, resp)) return;
    static const char *const share_keys[] = {"permission", "perm", "emails", NULL};
    static const char *const unshare_keys[] = {"emails", NULL};
    const char *perm = NULL, *perm2 = NULL;
    _share sh = {.done = json_array()};
    json_t *users = NULL;
    if (!vf_req_body(&x, share ? share_keys : unshare_keys) || !_emails(x.fr.body, "emails", resp))
        goto out;
    if (share && (!pgjson_field_enum(x.fr.body, "permission", false, "ro|rw|wd", &perm, resp) ||
                  !pgjson_field_enum(x.fr.body, "perm", false, "ro|rw|wd", &perm2, resp)))
        goto out;
    if (!perm) perm = perm2 ? perm2 : "rw";
    if (!vf_req_folder(&x, VF_PERM_OWNER)) goto out;
    if (x.f.ownership != VF_OWNER_PROJECT) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "vfolder %s is a user folder: use invite to share it", x.f.name);
        goto out;
    }
    sh.perm = share ? perm : NULL;
    if (!(users = _users(&x, share ? _member_why : NULL)) ||
        !_change_all(&x, users, _share_one, &sh))
        goto out;
    size_t i;
    json_t *u;
    json_array_foreach(users, i, u)
    {
        if (json_is_true(json_object_get(u, "unchanged"))) continue;
        vf_event_shared(x.fr.s, req->request_id, x.f.id,
                        json_string_value(json_object_get(u, "id")), sh.perm, x.c.user_id, NULL,
                        !share);
    }
    TLOG_INFO(share ? "vfolder shared" : "vfolder unshared", "users=%zu", json_array_size(sh.done));
    http_reply_json(resp, share ? 201 : 200,
                    json_pack("{s:O}", share ? "shared_emails" : "unshared_emails", sh.done));
out:
    json_decref(users);
    json_decref(sh.done);
    vf_req_end(&x);
}

void vf_h_share(http_req *req, http_resp *resp, void *ctx)
{
    _share_or_unshare(req, resp, ctx, true);
}

void vf_h_unshare(http_req *req, http_resp *resp, void *ctx)
{
    _share_or_unshare(req, resp, ctx, false);
}
